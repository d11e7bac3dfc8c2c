# pg_warmcache/Makefile

MODULE_big = pg_warmcache
OBJS = $(patsubst %.c,%.o,$(wildcard src/*.c))
PGFILEDESC = "pg_warmcache - warm the buffer cache, hottest first"

EXTENSION = pg_warmcache
DATA = pg_warmcache--1.0.sql pg_warmcache--1.0--1.1.sql \
	pg_warmcache--1.1--1.2.sql pg_warmcache--1.2--1.3.sql \
	pg_warmcache--1.3--1.4.sql

PG_CPPFLAGS = -I$(srcdir)/include

# The regression tests need the library preloaded; pg_regress honours
# --temp-config only together with --temp-instance.
REGRESS = warm warm_errors warm_privileges warm_table functions dump_merge readiness upgrade
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
