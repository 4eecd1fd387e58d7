# queue_ext: a message broker inside PostgreSQL (PGXS build)

MODULE_big = queue_ext
EXTENSION = queue_ext
PGFILEDESC = "queue_ext - message broker with an append-only log table access method"

# The module, by family, from the entry point down (docs/architecture.md).
# Entry point: _PG_init calls each family's init function
OBJS = src/queue_ext.o
# SQL entry points: parse arguments, check privileges, call one verb
OBJS += src/topology_sql.o src/publish_sql.o src/consume_sql.o src/settle_sql.o src/stats_sql.o \
	src/filter_sql.o src/stream_sql.o src/group_sql.o src/redrive_sql.o \
	src/replication_sql.o src/dump_sql.o
# ... and the planner hook that puts mq functions' DEFAULT arguments into calls
OBJS += src/plan_defaults.o
# Background workers: the launcher and per-database worker, their registry
OBJS += src/worker.o src/worker_shmem.o
# Verbs: settle (queue state, then the settling sequence), firing delayed
# messages, purge, publish (overflow, dead-lettering, the settling
# sequence), the durability of commits, the message and entries
# a publish builds, a message's broker annotations (CC/BCC, death marks),
# delayed and half messages, maintenance, quorum commits
OBJS += src/settle.o src/timers_fire.o src/purge.o src/quorum.o src/durability.o src/publish.o \
	src/publish_entry.o src/annotations.o src/timers.o src/half.o src/maintenance.o
# Queue state (src/queue/queue.h): consumer state of classic/quorum queues
# and of streams' consumer groups, offsets, reads and retention of stream
# partitions
OBJS += src/queue/queue_group.o src/queue/queue_take.o src/queue/queue_settle.o src/queue/queue_append.o \
	src/queue/queue_lane.o src/queue/queue_order.o src/queue/queue_stream.o \
	src/queue/queue_inspect.o src/queue/queue_xact.o src/queue/queue_load.o \
	src/queue/queue_shmem.o
# The message log: segments and messages (it knows nothing of queues)
OBJS += src/msglog.o
# Routing dispatch, privileges, the topology cache, the routing matchers
# and the message filters
OBJS += src/route.o src/acl.o src/catalog.o src/routing_topic.o src/routing_headers.o src/filter.o
# Leaves: argument checks, running SQL as the owner, receipts' text, small
# helpers
OBJS += src/args.o src/owner.o src/receipt.o src/mqutils.o
# Storage (src/am/mqlog.h): the mqlog table access method
OBJS += src/am/mqlog_handler.o src/am/mqlog_insert.o src/am/mqlog_scan.o \
	src/am/mqlog_index.o src/am/mqlog_visibility.o src/am/mqlog_vacuum.o \
	src/am/mqlog_toast.o src/am/mqlog_row.o src/am/mqlog_page.o \
	src/am/mqlog_delta.o src/am/mqlog_xlog.o src/am/mqlog_verify.o \
	src/am/mqlog_inspect.o src/am/mqlog_tail.o
# every C file must be listed above
ifneq ($(sort $(OBJS)),$(sort $(patsubst %.c,%.o,$(wildcard src/*.c src/am/*.c src/queue/*.c))))
$(error OBJS in the Makefile does not list exactly the C files under src/)
endif
PG_CPPFLAGS = -I$(srcdir)/src

# The library reads and writes the schema of one extension version: its
# MQ_EXTENSION_VERSION (src/catalog.h) must be the control file's
# default_version, and that version needs its install script.
MQ_CONTROL_VERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" queue_ext.control)
MQ_LIBRARY_VERSION := $(shell sed -n 's/^\#define[[:space:]]*MQ_EXTENSION_VERSION[[:space:]]*"\(.*\)"/\1/p' src/catalog.h)
ifneq ($(MQ_CONTROL_VERSION),$(MQ_LIBRARY_VERSION))
$(error queue_ext.control has default_version '$(MQ_CONTROL_VERSION)' but src/catalog.h has MQ_EXTENSION_VERSION "$(MQ_LIBRARY_VERSION)")
endif

# The SQL of the extension is written once, in src/sql/, by topic (as
# timescaledb's sql/ and sql/updates/).  base.sql holds what only a fresh
# install runs (the access method, tables, sequences, indexes, config
# dumps) and base_data.sql the rows it starts with; every other file
# defines functions and views with CREATE OR REPLACE, so that running it
# again is an upgrade.  make builds, from them, the install script of
# default_version and, for each src/sql/updates/FROM--TO.sql (the hand-written
# part of an update: new tables and columns, dropped objects, data), the
# update script queue_ext--FROM--TO.sql, which is that file followed by the
# same function files.  The install script says CREATE where the files say
# CREATE OR REPLACE, so a function defined twice fails the install.  Both are
# build outputs (DATA_built: not in git, removed by make clean).  comments.sql
# comes last: it comments the public functions and views the others made.
MQ_SQL_FUNCS = $(addprefix src/sql/,mqlog.sql topology.sql routing.sql \
	msglog.sql api_topology.sql api_publish.sql api_consume.sql stats.sql \
	half.sql timers.sql trace.sql groups.sql dump.sql definitions.sql \
	comments.sql)
MQ_SQL_INSTALL = src/sql/lz4_begin.sql src/sql/base.sql $(MQ_SQL_FUNCS) \
	src/sql/base_data.sql src/sql/lz4_end.sql
MQ_SQL_UPDATES = $(patsubst src/sql/updates/%.sql,%,$(wildcard src/sql/updates/*--$(MQ_CONTROL_VERSION).sql))
DATA_built = queue_ext--$(MQ_CONTROL_VERSION).sql $(MQ_SQL_UPDATES:%=queue_ext--%.sql)
EXTRA_CLEAN = $(DATA_built:%=%.tmp)
# every file of src/sql/ must be listed above
ifneq ($(sort $(MQ_SQL_INSTALL)),$(sort $(wildcard src/sql/*.sql)))
$(error MQ_SQL_INSTALL in the Makefile does not list exactly the files src/sql/*.sql)
endif

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

# The generated scripts (see MQ_SQL_FUNCS above).  Each file is preceded by
# a comment naming it, so that an error's line leads back to its source.
define mq_sql_cat
for f in $(1); do printf '\n-- %s\n' "$$f"; sed -e 's/^CREATE OR REPLACE \(FUNCTION\|VIEW\) /CREATE \1 /' "$$f"; done
endef
queue_ext--$(MQ_CONTROL_VERSION).sql: $(MQ_SQL_INSTALL) Makefile
	{ printf '%s\n' '/* $@: install script for queue_ext $(MQ_CONTROL_VERSION), made by make from src/sql/ (edit those) */' '' \
		'-- complain if script is sourced in psql, rather than via CREATE EXTENSION' \
		'\echo Use "CREATE EXTENSION queue_ext" to load this file. \quit'; \
	  $(call mq_sql_cat,$(filter %.sql,$^)); } >$@.tmp && mv $@.tmp $@
queue_ext--%--$(MQ_CONTROL_VERSION).sql: src/sql/updates/%--$(MQ_CONTROL_VERSION).sql $(MQ_SQL_FUNCS) src/sql/lz4_begin.sql src/sql/lz4_end.sql Makefile
	{ printf '%s\n' '/* $@: update script of queue_ext, made by make from src/sql/ (edit those) */' '' \
		'-- complain if script is sourced in psql, rather than via ALTER EXTENSION' \
		'\echo Use "ALTER EXTENSION queue_ext UPDATE TO '"'"'$(MQ_CONTROL_VERSION)'"'"'" to load this file. \quit'; \
	  for f in $(filter %/lz4_begin.sql,$^) $< $(filter-out $< %/lz4_begin.sql %/lz4_end.sql,$(filter %.sql,$^)) \
		$(filter %/lz4_end.sql,$^); do printf '\n-- %s\n' "$$f"; cat "$$f"; done; } >$@.tmp && mv $@.tmp $@

# PGXS tracks no header dependencies: rebuild everything when a header changes
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/am/*.h $(srcdir)/src/queue/*.h)

# mqctl, the command-line tool (mqctl/Makefile, a PGXS program on libpq and
# json-c): built, installed and cleaned with the extension
all: mqctl-all
install: mqctl-install
clean: mqctl-clean
uninstall: mqctl-uninstall
.PHONY: mqctl-all mqctl-install mqctl-clean mqctl-uninstall
mqctl-all:
	$(MAKE) -C $(srcdir)/mqctl PG_CONFIG='$(PG_CONFIG)'
# PostgreSQL's bindir is not on Debian's PATH (psql there is a wrapper in
# /usr/bin): a link in MQCTL_LINK_DIR puts mqctl on it (empty: none)
MQCTL_LINK_DIR ?= /usr/local/bin
mqctl-install: mqctl-all
	$(MAKE) -C $(srcdir)/mqctl PG_CONFIG='$(PG_CONFIG)' install
	@if [ -z '$(DESTDIR)' ] && [ -n '$(MQCTL_LINK_DIR)' ] && [ -d '$(MQCTL_LINK_DIR)' ] && \
		[ -w '$(MQCTL_LINK_DIR)' ]; then \
		ln -sf '$(bindir)/mqctl' '$(MQCTL_LINK_DIR)/mqctl'; fi
mqctl-clean mqctl-uninstall: mqctl-%:
	$(MAKE) -C $(srcdir)/mqctl PG_CONFIG='$(PG_CONFIG)' $*

# queue_ext_pgmq, pgmq's SQL API on queue_ext (queue_ext_pgmq/Makefile, SQL
# only, docs/pgmq.md): built, installed and cleaned with the extension
all: pgmq-all
install: pgmq-install
clean: pgmq-clean
uninstall: pgmq-uninstall
.PHONY: pgmq-all pgmq-install pgmq-clean pgmq-uninstall
pgmq-all pgmq-install pgmq-clean pgmq-uninstall: pgmq-%:
	$(MAKE) -C $(srcdir)/queue_ext_pgmq PG_CONFIG='$(PG_CONFIG)' $(patsubst all,,$*)

# mq-amqp, the AMQP 0-9-1 gateway (gateway/Makefile, a PGXS program on libpq,
# libevent and json-c; docs/amqp.md): built, installed and cleaned with the
# extension, linked into MQCTL_LINK_DIR like mqctl
all: gateway-all
install: gateway-install
clean: gateway-clean
uninstall: gateway-uninstall
.PHONY: gateway-all gateway-install gateway-clean gateway-uninstall
gateway-all:
	$(MAKE) -C $(srcdir)/gateway PG_CONFIG='$(PG_CONFIG)'
gateway-install: gateway-all
	$(MAKE) -C $(srcdir)/gateway PG_CONFIG='$(PG_CONFIG)' install
	@if [ -z '$(DESTDIR)' ] && [ -n '$(MQCTL_LINK_DIR)' ] && [ -d '$(MQCTL_LINK_DIR)' ] && \
		[ -w '$(MQCTL_LINK_DIR)' ]; then \
		ln -sf '$(bindir)/mq-amqp' '$(MQCTL_LINK_DIR)/mq-amqp'; fi
gateway-clean gateway-uninstall: gateway-%:
	$(MAKE) -C $(srcdir)/gateway PG_CONFIG='$(PG_CONFIG)' $*

# mq-rocketmq, the RocketMQ 5 gRPC gateway (rocketmq/Makefile, a PGXS
# program on libpq, libevent, libnghttp2, protobuf-c, json-c and libcrypto;
# docs/rocketmq.md): built, installed and cleaned with the extension, linked
# into MQCTL_LINK_DIR like mqctl
all: rocketmq-all
install: rocketmq-install
clean: rocketmq-clean
uninstall: rocketmq-uninstall
.PHONY: rocketmq-all rocketmq-install rocketmq-clean rocketmq-uninstall
rocketmq-all:
	$(MAKE) -C $(srcdir)/rocketmq PG_CONFIG='$(PG_CONFIG)'
rocketmq-install: rocketmq-all
	$(MAKE) -C $(srcdir)/rocketmq PG_CONFIG='$(PG_CONFIG)' install
	@if [ -z '$(DESTDIR)' ] && [ -n '$(MQCTL_LINK_DIR)' ] && [ -d '$(MQCTL_LINK_DIR)' ] && \
		[ -w '$(MQCTL_LINK_DIR)' ]; then \
		ln -sf '$(bindir)/mq-rocketmq' '$(MQCTL_LINK_DIR)/mq-rocketmq'; fi
rocketmq-clean rocketmq-uninstall: rocketmq-%:
	$(MAKE) -C $(srcdir)/rocketmq PG_CONFIG='$(PG_CONFIG)' $*

# www/, the management web UI (plain HTML, CSS and JavaScript, no build
# step; docs/management.md): installed into $(pg_config --sharedir)/queue_ext/www,
# the directory mq-amqp's HTTP server serves at / unless --http-www says
# another
MQ_WWW = www/index.html www/app.css www/ui.js www/pages.js www/app.js
ifneq ($(sort $(MQ_WWW)),$(sort $(patsubst $(srcdir)/%,%,$(wildcard $(srcdir)/www/*))))
$(error MQ_WWW in the Makefile does not list exactly the files of www/)
endif
install: www-install
uninstall: www-uninstall
.PHONY: www-install www-uninstall
www-install:
	$(MKDIR_P) '$(DESTDIR)$(datadir)/queue_ext/www'
	$(INSTALL_DATA) $(addprefix $(srcdir)/,$(MQ_WWW)) '$(DESTDIR)$(datadir)/queue_ext/www/'
www-uninstall:
	rm -f $(addprefix '$(DESTDIR)$(datadir)/queue_ext/www/',$(notdir $(MQ_WWW)))
	-rmdir '$(DESTDIR)$(datadir)/queue_ext/www' '$(DESTDIR)$(datadir)/queue_ext' 2>/dev/null

# man pages of mqctl, mq-amqp and mq-rocketmq: made by help2man (Debian's help2man) from
# each program's --help and --version, with the examples and "see also" of
# man/*.h2m; installed into PostgreSQL's man directory (pg_config --mandir)
# and linked from MQ_MAN_LINK_DIR, which man searches whatever PATH is
# (empty: no link), so that "man mqctl" works.  Without help2man: a warning,
# no pages.
HELP2MAN ?= help2man
MQ_MAN_LINK_DIR ?= /usr/local/share/man/man1
MQ_MAN_PAGES = mqctl/mqctl.1 gateway/mq-amqp.1 rocketmq/mq-rocketmq.1
all: man-all
install: man-install
clean: man-clean
uninstall: man-uninstall
.PHONY: man-all man-install man-clean man-uninstall
man-all: mqctl-all gateway-all rocketmq-all
	@if command -v '$(HELP2MAN)' >/dev/null 2>&1; then \
		set -e; \
		$(HELP2MAN) --no-info --include=$(srcdir)/man/mqctl.h2m \
			--name='command-line tool of queue_ext, the message broker in PostgreSQL' \
			--output=$(srcdir)/mqctl/mqctl.1 $(srcdir)/mqctl/mqctl; \
		$(HELP2MAN) --no-info --include=$(srcdir)/man/mq-amqp.h2m \
			--name='AMQP 0-9-1 gateway of queue_ext, the message broker in PostgreSQL' \
			--output=$(srcdir)/gateway/mq-amqp.1 $(srcdir)/gateway/mq-amqp; \
		$(HELP2MAN) --no-info --include=$(srcdir)/man/mq-rocketmq.h2m \
			--name='RocketMQ 5 gRPC gateway of queue_ext, the message broker in PostgreSQL' \
			--output=$(srcdir)/rocketmq/mq-rocketmq.1 $(srcdir)/rocketmq/mq-rocketmq; \
	else \
		echo 'warning: help2man not found (apt-get install help2man): no man pages for mqctl, mq-amqp and mq-rocketmq' >&2; \
	fi
man-install: man-all
	@for page in $(MQ_MAN_PAGES); do \
		[ -f '$(srcdir)/'$$page ] || continue; \
		$(MKDIR_P) '$(DESTDIR)$(mandir)/man1' && \
		$(INSTALL_DATA) '$(srcdir)/'$$page '$(DESTDIR)$(mandir)/man1/' || exit 1; \
		if [ -z '$(DESTDIR)' ] && [ -n '$(MQ_MAN_LINK_DIR)' ] && \
			mkdir -p '$(MQ_MAN_LINK_DIR)' 2>/dev/null && [ -w '$(MQ_MAN_LINK_DIR)' ]; then \
			ln -sf '$(mandir)/man1/'$${page##*/} '$(MQ_MAN_LINK_DIR)/'$${page##*/}; fi; \
	done
man-clean:
	rm -f $(addprefix $(srcdir)/,$(MQ_MAN_PAGES))
man-uninstall:
	rm -f $(addprefix '$(DESTDIR)$(mandir)/man1/',$(notdir $(MQ_MAN_PAGES)))
