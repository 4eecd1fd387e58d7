# queue_ext: a message broker inside PostgreSQL (PGXS build)

MODULE_big = queue_ext
EXTENSION = queue_ext
DATA = $(wildcard queue_ext--*.sql)
PGFILEDESC = "queue_ext - message broker with an append-only log table access method"

# Every C file under src/ is part of the module.
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/am/*.c src/queue/*.c)))
PG_CPPFLAGS = -I$(srcdir)/src

# pg_regress: one test per file in sql/, run in this order.
REGRESS = $(shell cat $(srcdir)/test/regress_schedule 2>/dev/null)
REGRESS_OPTS = --load-extension=queue_ext

# isolation tester: specs live in test/isolation/specs
ISOLATION = $(shell cat $(srcdir)/test/isolation_schedule 2>/dev/null)
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --outputdir=output_iso \
	--load-extension=queue_ext

# TAP tests (crash recovery, streaming replication)
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

PG_CONFIG ?= $(shell command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild everything when a header changes
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/am/*.h $(srcdir)/src/queue/*.h)
