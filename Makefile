# jobqueue: PGXS build of the PostgreSQL extension.
# The client library (C++) is a separate CMake tree under client/.

# The source tree, also when make runs out of tree (pg_buildext's VPATH builds).
TOPDIR := $(dir $(firstword $(MAKEFILE_LIST)))
EXTVERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(TOPDIR)extension/jobqueue.control)

# The control files live under extension/ (jobqueue) and extension/router/
# (jobqueue_router, the router database's extension), so EXTENSION stays unset
# and they are installed as plain DATA into share/extension.
MODULEDIR = extension
DATA = extension/jobqueue.control \
	extension/scripts/jobqueue--1.0.sql \
	extension/scripts/jobqueue--1.0--1.1.sql \
	extension/scripts/jobqueue--1.1--1.2.sql \
	extension/scripts/jobqueue--1.2--1.3.sql \
	extension/scripts/jobqueue--1.3--1.4.sql \
	extension/scripts/jobqueue--1.4--1.5.sql \
	extension/scripts/jobqueue--1.5--1.6.sql \
	extension/scripts/jobqueue--1.6--1.7.sql \
	extension/router/jobqueue_router.control

# jobqueue_router's install script is made of its parts, one concern each, in
# this order (the rule is below PGXS's, which must come first).  It is built at
# an absolute path: an out-of-tree build (VPATH) then makes its own instead of
# taking the one an in-tree build left.
ROUTER_PARTS = \
	extension/router/parts/head.sql \
	extension/router/parts/mapping.sql \
	extension/router/parts/push.sql \
	extension/router/parts/reserve.sql \
	extension/router/parts/finish.sql \
	extension/router/parts/backlog.sql \
	extension/router/parts/failed.sql \
	extension/router/parts/admin.sql \
	extension/router/parts/schedules.sql \
	extension/router/parts/grants.sql \
	extension/router/parts/flow.sql
DATA_built = $(CURDIR)/extension/router/jobqueue_router--1.0.sql

MODULE_big = jobqueue
OBJS = \
	extension/src/jobqueue.o \
	extension/src/base/args.o \
	extension/src/base/base.o \
	extension/src/base/cron.o \
	extension/src/base/errortext.o \
	extension/src/base/settings.o \
	extension/src/exec/call.o \
	extension/src/exec/exec.o \
	extension/src/exec/hotpath.o \
	extension/src/exec/kept_ids.o \
	extension/src/exec/results.o \
	extension/src/exec/searchpath.o \
	extension/src/exec/statements.o \
	extension/src/store/claimed_row.o \
	extension/src/store/direct_claim.o \
	extension/src/store/direct_delete.o \
	extension/src/store/direct_insert.o \
	extension/src/store/direct_slots.o \
	extension/src/store/direct_update.o \
	extension/src/store/direct_write.o \
	extension/src/store/settings_row.o \
	extension/src/store/shape.o \
	extension/src/store/ring.o \
	extension/src/store/row_indexes.o \
	extension/src/store/store.o \
	extension/src/runtime/claimpos.o \
	extension/src/runtime/counters.o \
	extension/src/runtime/duehint.o \
	extension/src/runtime/notifier.o \
	extension/src/runtime/prepared.o \
	extension/src/runtime/runnable.o \
	extension/src/runtime/runtime.o \
	extension/src/runtime/shmem.o \
	extension/src/runtime/ticker.o \
	extension/src/runtime/waiting.o \
	extension/src/runtime/wakeup.o \
	extension/src/runtime/xact.o \
	extension/src/flow/concurrency.o \
	extension/src/flow/dependencies.o \
	extension/src/flow/flow.o \
	extension/src/flow/ratelimit.o \
	extension/src/api/admin.o \
	extension/src/api/api.o \
	extension/src/api/batch.o \
	extension/src/api/browse.o \
	extension/src/api/complete.o \
	extension/src/api/failed.o \
	extension/src/api/grants.o \
	extension/src/api/promote.o \
	extension/src/api/push.o \
	extension/src/api/reports.o \
	extension/src/api/reserve.o \
	extension/src/api/rotation.o \
	extension/src/api/schedules.o \
	extension/src/api/shard.o

# Out-of-tree builds need the object directories in the build tree.
ifdef VPATH
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

# The version also names the module in PostgreSQL 18's magic block.
PG_CPPFLAGS = -I$(srcdir)/extension/src -DJQ_EXTVERSION='"$(EXTVERSION)"'

REGRESS = \
	push \
	reserve \
	complete \
	reports \
	failed \
	errors \
	clock \
	privileges \
	schema \
	batch \
	admin \
	deadlines \
	errors_1_1 \
	privileges_1_1 \
	schedules \
	waiting \
	ring \
	counters \
	plans \
	browse \
	flow \
	shard \
	upgrade \
	upgrade_1_2 \
	upgrade_1_3 \
	upgrade_1_4 \
	upgrade_1_5 \
	upgrade_1_5_overview upgrade_1_6 upgrade_1_7 \
	indexes
REGRESS_OPTS = --load-extension=jobqueue

ISOLATION = $(basename $(notdir $(wildcard tests/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=tests/isolation --load-extension=jobqueue

EXTRA_CLEAN = results regression.diffs regression.out output_iso

# No LLVM bitcode: JIT inlining of these functions gains nothing, and it
# would make clang a build dependency.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The router's install script from its parts (ROUTER_PARTS above).
$(CURDIR)/extension/router/jobqueue_router--1.0.sql: $(addprefix $(TOPDIR),$(ROUTER_PARTS))
	@mkdir -p $(@D)
	cat $^ > $@

.PHONY: version-check dist
# META.json must follow the PGXN Meta Spec and carry the control file's version.
version-check:
	@python3 $(TOPDIR)scripts/pgxn-check.py $(TOPDIR)META.json

# PGXN distribution: jobqueue-<version>.zip of the git tree DIST_REF, its
# files under jobqueue-<version>/, checked before it gets its final name.
# PGXN versions are semantic versions, so the control file's 1.2 is 1.2.0.
DISTVERSION := $(shell echo '$(EXTVERSION)' | sed 's/^[0-9]*\.[0-9]*$$/&.0/')
DIST_REF ?= HEAD
DIST_ZIP ?= jobqueue-$(DISTVERSION).zip
dist:
	git -C $(TOPDIR) archive --format=zip --prefix=jobqueue-$(DISTVERSION)/ $(DIST_REF) > $(DIST_ZIP).tmp
	python3 $(TOPDIR)scripts/pgxn-check.py $(DIST_ZIP).tmp || { rm -f $(DIST_ZIP).tmp; exit 1; }
	mv $(DIST_ZIP).tmp $(DIST_ZIP)

# PGXS tracks no header dependencies: every object depends on every folder's
# header (one per folder, extension/src/README.md; contract.h and compat.h are parts of base.h).
JQ_HEADERS = \
	extension/src/base/base.h \
	extension/src/base/contract.h \
	extension/src/base/compat.h \
	extension/src/exec/exec.h \
	extension/src/store/store.h \
	extension/src/runtime/runtime.h \
	extension/src/flow/flow.h \
	extension/src/api/api.h
$(OBJS): $(JQ_HEADERS)

.PHONY: contract-check
# The frozen SQL scripts state the contract's defaults; contract.h must agree.
contract-check:
	@python3 $(srcdir)/scripts/check_contract.py $(srcdir)

.PHONY: layer-check
# The C source's layers (extension/src/README.md): no include goes up a layer.
layer-check:
	@python3 $(srcdir)/scripts/check_layers.py $(srcdir)
