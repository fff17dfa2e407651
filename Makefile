# perf-sample-ext: a perf_events patch series for Linux 6.12 LTS.
# Each target is a thin wrapper around a script in scripts/.

ARCH ?= x86_64
S := scripts
# V=1: make shows the commands it runs, and make vm the whole console.
Q := $(if $(filter 1,$(V)),,@)
# $(call quoted,VAR): the text of VAR as given, quoted for the shell (no $
# of it expanded by make or by the shell).
sq := '
quoted = '$(subst $(sq),$(sq)\$(sq)$(sq),$(value $(1)))'

.PHONY: check demo bench deps tree assemble export series roundtrip abi-check \
	kernel perf selftests pprof build vm test fresh clean help \
	perf-asan fuzz fuzz-seeds stress

help:
	@echo "make check       build everything, boot both guests, run every test"
	@echo "make demo        boot the x86_64 guest and show the series at work"
	@echo "make bench       benchmarks in both guests -> build/bench/results.tsv"
	@echo "make series [FEATURES='deferred tls']  git-am-able sub-series (and what they apply on) -> build/series/"
	@echo "make assemble    apply the series to build/linux (branch 'series')"
	@echo "make export      write build/linux's commits back to patches/ and the overlays"
	@echo "make roundtrip   assemble + export must change no byte"
	@echo "make abi-check   no ABI number of the series is one upstream has or takes next"
	@echo "make build       kernel, perf and kselftests for ARCH=$(ARCH)"
	@echo "make test ARCH=arm64 T=sigtrap   run tests whose name contains T in one guest"
	@echo "make test KFLAVOUR=kasan ARCH=arm64  the same on a KASAN+UBSAN kernel (build/obj-ARCH-kasan)"
	@echo "make vm ARCH=x86_64 CMD='perf list' [OUT=DIR] [TIMEOUT=900] [V=1]  run one command in a guest:"
	@echo "                 its output only (V=1: the whole console), its exit status; the guest's"
	@echo "                 /tmp/out is OUT (default build/vm/ARCH), the console OUT/console.log;"
	@echo "                 the guest is ended after TIMEOUT seconds (default 900)"
	@echo "make stress ARCH=arm64 SECONDS=600 [SEED=n] [KFLAVOUR=kasan]  the ABI stress in one guest"
	@echo "make fuzz        10,000 mutants per record kind against an ASan/UBSan perf (N=..., JOBS=...)"
	@echo "make fuzz-seeds  record the fuzz seeds in the x86_64 guest -> fuzz/seeds/"
	@echo "make fresh       a new machine: debootstrap root, install, tool checks, make check, make demo"

check:
	$S/check.sh

demo:
	$S/demo.sh

bench:
	$S/bench.sh

deps:
	$(Q)$S/deps.sh

tree: deps
	$(Q)$S/base-tree.sh

assemble: tree
	$(Q)$S/series.sh assemble

export:
	$S/series.sh export

# FEATURES: sub-series of patches/subseries (all by default).
series: tree
	$S/series.sh mbox build/series $(FEATURES)

roundtrip: tree
	$S/series.sh roundtrip

abi-check: assemble
	python3 $S/abi-check.py build/linux $S/upstream-abi.tsv

kernel: assemble
	$(Q)$S/build-kernel.sh $(ARCH)

perf: assemble
	$(Q)$S/build-perf.sh $(ARCH)

selftests: kernel
	$(Q)$S/build-selftests.sh $(ARCH)

# Google's pprof, from Debian's source package, for the pprof export test
pprof: deps
	$(Q)$S/build-pprof.sh $(ARCH)

build: kernel selftests perf pprof

# The command's output and exit status (make says "Error N" for status N);
# scripts/vm.sh documents the guest.
vm: build
	$(Q)$S/vm.sh $(ARCH) $(if $(filter 1,$(V)),-v) $(if $(TIMEOUT),-t $(TIMEOUT)) \
		$(if $(OUT),-o "$(OUT)") $(call quoted,CMD)

fresh: deps
	$S/fresh-root.sh --full

test: build
	$S/run-tests.sh $(ARCH) "$(T)"

# The ABI stress (stress/abi_stress.c) for SECONDS in one guest; SEED
# replays a run, STRESS_ARGS are more options of the program.
stress: kernel
	$S/stress.sh $(ARCH) $(or $(SECONDS),60) "$(SEED)" $(STRESS_ARGS)

perf-asan: assemble
	fuzz/build-perf-asan.sh

# N mutants per record kind, JOBS perf processes at once (default: one
# per CPU); figures on stderr, one line per kind in build/fuzz/results.tsv,
# crashing mutants in build/fuzz/crashes/
fuzz: perf-asan
	mkdir -p build/fuzz
	python3 fuzz/fuzz.py --perf build/perf-asan/perf --mutants $(or $(N),10000) \
		--jobs $(or $(JOBS),$(shell nproc)) \
		--keep build/fuzz/crashes > build/fuzz/results.tsv; \
		rc=$$?; cat build/fuzz/results.tsv; exit $$rc

fuzz-seeds: build
	$S/vm.sh x86_64 -o $(CURDIR)/build/fuzz-rec "sh $(CURDIR)/fuzz/record-seeds.sh"
	python3 fuzz/make-seeds.py build/fuzz-rec

clean:
	rm -rf build
