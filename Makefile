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

EXTRA_CLEAN = tmp_check log results regression.diffs regression.out \
	$(IMAGE_DIR) $(IMAGE_DIR).bundle

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

# `make image`: an OCI image of the extension alone, as CloudNativePG
# (1.27 on) mounts one as an image volume: lib/pg_warmcache.so and
# share/extension/ (the control file and the SQL scripts), nothing else,
# for the major of PG_CONFIG.  PostgreSQL finds such files only from 18 on,
# through extension_control_path.  Debian's umoci builds it without a
# daemon or root (--rootless: the files are root's in the image), into the
# OCI layout directory IMAGE_DIR, by unpacking an empty image and packing
# it again with the files (umoci 0.4.7's insert writes truncated layers).
# The tag is CloudNativePG's convention,
# <extversion>-<timestamp>-<major>-<distro>, beside the rolling
# <extversion>-<major>-<distro>; the distribution is this machine's, which
# must be the one of the PostgreSQL image that loads the library.  See
# docs/kubernetes.md.
IMAGE_DIR = image
IMAGE_DISTRO = $(shell . /etc/os-release && echo $$VERSION_CODENAME)
IMAGE_TIMESTAMP = $(shell date -u +%Y%m%d%H%M)

# Refused before anything is built.
ifneq ($(filter image,$(MAKECMDGOALS)),)
ifneq ($(shell test "$(MAJORVERSION)" -ge 18 && echo yes),yes)
$(error make image: PostgreSQL $(MAJORVERSION) cannot load an extension from an image volume: extension_control_path is new in 18; set PG_CONFIG to the pg_config of 18 or later)
endif
ifeq ($(shell command -v umoci),)
$(error make image: umoci is not installed (Debian: apt-get install umoci))
endif
endif

.PHONY: image
image: all
	@set -e; \
	tag=$(EXTVERSION)-$(IMAGE_TIMESTAMP)-$(MAJORVERSION)-$(IMAGE_DISTRO); \
	root=$(IMAGE_DIR).bundle/rootfs; \
	rm -rf $(IMAGE_DIR) $(IMAGE_DIR).bundle; \
	umoci init --layout $(IMAGE_DIR); \
	umoci new --image $(IMAGE_DIR):$$tag; \
	umoci unpack --rootless --image $(IMAGE_DIR):$$tag $(IMAGE_DIR).bundle; \
	chmod 755 $$root; \
	install -d -m 755 $$root/lib $$root/share $$root/share/extension; \
	install -m 755 $(MODULE_big)$(DLSUFFIX) $$root/lib/; \
	install -m 644 $(srcdir)/$(EXTENSION).control $(addprefix $(srcdir)/,$(DATA)) \
		$$root/share/extension/; \
	umoci repack --history.created_by "make image" --image $(IMAGE_DIR):$$tag $(IMAGE_DIR).bundle; \
	umoci config --no-history --image $(IMAGE_DIR):$$tag \
		--config.label io.cloudnativepg.image.base.pgmajor=$(MAJORVERSION) \
		--config.label io.cloudnativepg.image.base.os=$(IMAGE_DISTRO) \
		--config.label io.cloudnativepg.image.sql.version=$(EXTVERSION) \
		--config.label org.opencontainers.image.title=$(EXTENSION) \
		--config.label org.opencontainers.image.version=$(EXTVERSION) \
		--config.label org.opencontainers.image.licenses=PostgreSQL \
		--manifest.annotation org.opencontainers.image.version=$(EXTVERSION); \
	umoci tag --image $(IMAGE_DIR):$$tag $(EXTVERSION)-$(MAJORVERSION)-$(IMAGE_DISTRO); \
	umoci gc --layout $(IMAGE_DIR); \
	rm -rf $(IMAGE_DIR).bundle; \
	echo "$(EXTENSION):$$tag"
