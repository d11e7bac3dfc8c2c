# pg_warmcache/Makefile

MODULE_big = pg_warmcache
OBJS = $(patsubst $(srcdir)/%.c,%.o,$(wildcard $(srcdir)/src/*.c))
PGFILEDESC = "pg_warmcache - warm the buffer cache, hottest first"

EXTENSION = pg_warmcache
DATA = pg_warmcache--1.0.sql pg_warmcache--1.0--1.1.sql \
	pg_warmcache--1.1--1.2.sql pg_warmcache--1.2--1.3.sql \
	pg_warmcache--1.3--1.4.sql pg_warmcache--1.4--1.5.sql \
	pg_warmcache--1.5--1.6.sql

# The release's version, as the control file says it; PG_MODULE_MAGIC_EXT
# says it too.  Read before PGXS, which takes PG_CPPFLAGS at once, and
# from beside this Makefile, which an out-of-tree build names.
EXTVERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" \
	$(dir $(firstword $(MAKEFILE_LIST)))pg_warmcache.control)
PG_CPPFLAGS = -I$(srcdir)/include -DWC_VERSION='"$(EXTVERSION)"'

# The regression tests need the library preloaded; pg_regress honours
# --temp-config only together with --temp-instance.
REGRESS = warm warm_errors warm_privileges warm_table functions dump_merge readiness upgrade \
	platform_shortcuts
REGRESS_OPTS = --temp-config=$(srcdir)/test/regress.conf --temp-instance=./tmp_check \
	--load-extension=pg_buffercache
TAP_TESTS = 1

EXTRA_CLEAN = tmp_check log results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# `make werror=1` is what CI builds with.
ifdef werror
override CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-sign-compare -Wno-missing-field-initializers -Wno-clobbered
endif

# An out-of-tree build (VPATH, as pg_buildext makes them) writes the
# objects below a src/ of its own.
$(OBJS): | objdir
.PHONY: objdir
objdir:
	@mkdir -p src

# `make dist`: the zip PGXN takes, of the committed tree (git archive),
# without the benchmarks, their results and the CI script.
.PHONY: dist
dist:
	git -C $(srcdir) archive --format=zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		-o $(CURDIR)/$(EXTENSION)-$(EXTVERSION).zip HEAD -- . \
		':!bench' ':!docs/bench' ':!docs/benchmarks.md' ':!.ci'

# `make deb`: the Debian binary packages, one postgresql-NN-warmcache per
# major that debian/pgversions and this system support, built with
# pg_buildext as Debian's PostgreSQL team builds extensions; dpkg-buildpackage
# writes them into the parent directory.  DEB_FLAGS passes it options
# (-d: do not check the build dependencies).
.PHONY: deb
deb:
	cd $(srcdir) && pg_buildext updatecontrol && dpkg-buildpackage -us -uc -b $(DEB_FLAGS)
