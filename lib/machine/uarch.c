/*
 * vendor/family/model → micro-architecture (pragma_uarch_lookup), and the
 * clock. A model writing a kernel needs to know what "AMD EPYC family 25
 * model 17" is: a Zen 4, whose 512-bit instructions run on 256-bit units.
 *
 * Model ranges follow the Linux kernel's own decoding
 * (arch/x86/kernel/cpu/amd.c, the X86_FEATURE_ZEN1..5 model ranges;
 * arch/x86/include/asm/intel-family.h for Intel). Unit widths, FMA pipes and
 * latencies come from the sources named in each row; cache latencies are
 * load-to-use in core cycles as those sources give them, and the L3 figure is
 * approximate (it grows with the distance across the mesh or CCX). A row
 * that does not exist for a CPU is not guessed: the CPU is reported unknown.
 */
#include <stdio.h>
#include <string.h>

#include "machine/machine_priv.h"

#define SRC_AMD17 "AMD Software Optimization Guide for AMD Family 17h Processors (pub. 55723); Agner Fog, " \
	"The microarchitecture of Intel, AMD and VIA CPUs, ch. AMD Zen; WikiChip: amd/microarchitectures/zen"
#define SRC_ZEN2 "AMD Software Optimization Guide for AMD Family 17h Models 30h and Greater (pub. 56305); " \
	"Agner Fog, microarchitecture manual, ch. AMD Zen; Chips and Cheese, Zen 2 articles; WikiChip: zen_2"
#define SRC_ZEN3 "AMD Software Optimization Guide for AMD Family 19h Processors (pub. 56665); Agner Fog, " \
	"microarchitecture manual, ch. AMD Zen 1-4; WikiChip: amd/microarchitectures/zen_3"
#define SRC_ZEN4 "AMD Software Optimization Guide for AMD Family 19h Models 10h and Greater (pub. 57647); " \
	"Chips and Cheese, AMD's Zen 4 Part 1 and Part 2 (2022); A. Yee, Zen4's AVX512 Teardown " \
	"(numberworld.org, 2022)"
#define SRC_ZEN5 "AMD Software Optimization Guide for AMD Family 1Ah Processors (pub. 58455); A. Yee, Zen5's " \
	"AVX512 Teardown (numberworld.org, 2024); Chips and Cheese, Zen 5 articles (2024)"
#define SRC_INTEL(ch) "Intel 64 and IA-32 Architectures Optimization Reference Manual (order 248966), " ch \
	"; Agner Fog, microarchitecture manual and instruction tables"

struct row {
	const char *vendor;
	int family, model_lo, model_hi, stepping_lo, stepping_hi;
	struct pragma_uarch u;
};

#define ALL_STEPPINGS 0, 255

static const struct row rows[] = {
	/* ---- AMD family 17h ---- */
	{ "AuthenticAMD", 0x17, 0x00, 0x2f, ALL_STEPPINGS,
	  { "Zen / Zen+", "EPYC 7001 Naples, Ryzen 1000/2000", 256, 128,
	    "256-bit AVX2 instructions split into two 128-bit halves: 128-bit code runs as fast", 2,
	    "FMA on two 128-bit pipes", 5, "4-5", "12-17", "~35-40", SRC_AMD17 } },
	{ "AuthenticAMD", 0x17, 0x50, 0x5f, ALL_STEPPINGS,
	  { "Zen / Zen+", "Ryzen embedded and APUs", 256, 128,
	    "256-bit AVX2 instructions split into two 128-bit halves: 128-bit code runs as fast", 2,
	    "FMA on two 128-bit pipes", 5, "4-5", "12-17", "~35-40", SRC_AMD17 } },
	{ "AuthenticAMD", 0x17, 0x30, 0x4f, ALL_STEPPINGS,
	  { "Zen 2", "EPYC 7002 Rome, Ryzen 3000", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "two FMA pipes and two FP add pipes", 5, "4-5", "12", "~39", SRC_ZEN2 } },
	{ "AuthenticAMD", 0x17, 0x60, 0x7f, ALL_STEPPINGS,
	  { "Zen 2", "Ryzen 4000/5000 APUs (Renoir, Lucienne), Matisse", 256, 256,
	    "native 256-bit AVX2 units; no AVX-512", 2, "two FMA pipes and two FP add pipes", 5, "4-5", "12",
	    "~39", SRC_ZEN2 } },
	{ "AuthenticAMD", 0x17, 0x90, 0x91, ALL_STEPPINGS,
	  { "Zen 2", "Van Gogh", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "two FMA pipes and two FP add pipes", 5, "4-5", "12", "~39", SRC_ZEN2 } },
	{ "AuthenticAMD", 0x17, 0xa0, 0xaf, ALL_STEPPINGS,
	  { "Zen 2", "Mendocino", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "two FMA pipes and two FP add pipes", 5, "4-5", "12", "~39", SRC_ZEN2 } },

	/* ---- AMD family 19h ---- */
	{ "AuthenticAMD", 0x19, 0x00, 0x0f, ALL_STEPPINGS,
	  { "Zen 3", "EPYC 7003 Milan", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "two FMA pipes and two FP add pipes", 4, "4-5", "12", "~46", SRC_ZEN3 } },
	{ "AuthenticAMD", 0x19, 0x20, 0x5f, ALL_STEPPINGS,
	  { "Zen 3", "Ryzen 5000 Vermeer/Cezanne, Ryzen 6000 Rembrandt (Zen 3+)", 256, 256,
	    "native 256-bit AVX2 units; no AVX-512", 2, "two FMA pipes and two FP add pipes", 4, "4-5", "12",
	    "~46", SRC_ZEN3 } },
	{ "AuthenticAMD", 0x19, 0x10, 0x1f, ALL_STEPPINGS,
	  { "Zen 4", "EPYC 9004 Genoa, Threadripper 7000", 512, 256,
	    "AVX-512 on 256-bit units: each 512-bit instruction is split into two 256-bit halves "
	    "(double-pumped), so 512-bit code has the same FLOP/cycle as AVX2; it still saves instructions and "
	    "gives masks and 32 registers",
	    2, "two 256-bit FMA pipes (one 512-bit FMA per cycle) and two FP add pipes", 4, "4-5", "14", "~50",
	    SRC_ZEN4 } },
	{ "AuthenticAMD", 0x19, 0x60, 0xaf, ALL_STEPPINGS,
	  { "Zen 4", "Ryzen 7000 Raphael/Phoenix, EPYC 8004 Siena, EPYC 97x4 Bergamo", 512, 256,
	    "AVX-512 on 256-bit units: each 512-bit instruction is split into two 256-bit halves "
	    "(double-pumped), so 512-bit code has the same FLOP/cycle as AVX2; it still saves instructions and "
	    "gives masks and 32 registers",
	    2, "two 256-bit FMA pipes (one 512-bit FMA per cycle) and two FP add pipes", 4, "4-5", "14", "~50",
	    SRC_ZEN4 } },

	/* ---- AMD family 1Ah ---- */
	{ "AuthenticAMD", 0x1a, 0x00, 0x1f, ALL_STEPPINGS,
	  { "Zen 5", "EPYC 9005 Turin", 512, 512, "native 512-bit FP units (full-width AVX-512)", 2,
	    "two 512-bit FMA pipes and two FP add pipes", 4, "4-5", "14", "~50", SRC_ZEN5 } },
	{ "AuthenticAMD", 0x1a, 0x40, 0x4f, ALL_STEPPINGS,
	  { "Zen 5", "Ryzen 9000 Granite Ridge", 512, 512, "native 512-bit FP units (full-width AVX-512)", 2,
	    "two 512-bit FMA pipes and two FP add pipes", 4, "4-5", "14", "~50", SRC_ZEN5 } },
	{ "AuthenticAMD", 0x1a, 0x70, 0x7f, ALL_STEPPINGS,
	  { "Zen 5", "Ryzen AI Max Strix Halo", 512, 512, "native 512-bit FP units (full-width AVX-512)", 2,
	    "two 512-bit FMA pipes and two FP add pipes", 4, "4-5", "14", "~50", SRC_ZEN5 } },
	{ "AuthenticAMD", 0x1a, 0x20, 0x2f, ALL_STEPPINGS,
	  { "Zen 5 (mobile)", "Ryzen AI 300 Strix Point", 512, 256,
	    "AVX-512 on 256-bit units (double-pumped, as on Zen 4): 512-bit code has the FLOP/cycle of AVX2", 2,
	    "two 256-bit FMA pipes and two FP add pipes", 4, "4-5", "14", "~50", SRC_ZEN5 } },
	{ "AuthenticAMD", 0x1a, 0x60, 0x6f, ALL_STEPPINGS,
	  { "Zen 5 (mobile)", "Ryzen AI 300 Krackan Point", 512, 256,
	    "AVX-512 on 256-bit units (double-pumped, as on Zen 4): 512-bit code has the FLOP/cycle of AVX2", 2,
	    "two 256-bit FMA pipes and two FP add pipes", 4, "4-5", "14", "~50", SRC_ZEN5 } },

	/* ---- Intel family 6 ---- */
	{ "GenuineIntel", 6, 0x3c, 0x3c, ALL_STEPPINGS,
	  { "Haswell", "Core 4th gen", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1", 5,
	    "4-5", "11-12", "~34-40", SRC_INTEL("ch. Haswell") } },
	{ "GenuineIntel", 6, 0x3f, 0x3f, ALL_STEPPINGS,
	  { "Haswell-EP", "Xeon E5 v3", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1", 5,
	    "4-5", "11-12", "~40-60 (ring)", SRC_INTEL("ch. Haswell") } },
	{ "GenuineIntel", 6, 0x45, 0x46, ALL_STEPPINGS,
	  { "Haswell", "Core 4th gen (mobile)", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1",
	    5, "4-5", "11-12", "~34-40", SRC_INTEL("ch. Haswell") } },
	{ "GenuineIntel", 6, 0x3d, 0x3d, ALL_STEPPINGS,
	  { "Broadwell", "Core 5th gen", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1", 5,
	    "4-5", "12", "~40", SRC_INTEL("ch. Broadwell") } },
	{ "GenuineIntel", 6, 0x47, 0x47, ALL_STEPPINGS,
	  { "Broadwell", "Core 5th gen (eDRAM)", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1",
	    5, "4-5", "12", "~40", SRC_INTEL("ch. Broadwell") } },
	{ "GenuineIntel", 6, 0x4f, 0x4f, ALL_STEPPINGS,
	  { "Broadwell-EP", "Xeon E5 v4", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1", 5,
	    "4-5", "12", "~40-65 (ring)", SRC_INTEL("ch. Broadwell") } },
	{ "GenuineIntel", 6, 0x56, 0x56, ALL_STEPPINGS,
	  { "Broadwell-DE", "Xeon D-1500", 256, 256, "native 256-bit AVX2 units", 2, "FMA on ports 0 and 1", 5,
	    "4-5", "12", "~40-65 (ring)", SRC_INTEL("ch. Broadwell") } },
	{ "GenuineIntel", 6, 0x4e, 0x4e, ALL_STEPPINGS,
	  { "Skylake (client)", "Core 6th gen", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "FMA on ports 0 and 1", 4, "4-5", "12", "~42", SRC_INTEL("ch. Skylake client") } },
	{ "GenuineIntel", 6, 0x5e, 0x5e, ALL_STEPPINGS,
	  { "Skylake (client)", "Core 6th gen, Xeon E3 v5", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "FMA on ports 0 and 1", 4, "4-5", "12", "~42", SRC_INTEL("ch. Skylake client") } },
	{ "GenuineIntel", 6, 0x8e, 0x8e, ALL_STEPPINGS,
	  { "Skylake (client)", "Kaby/Coffee/Whiskey/Amber/Comet Lake mobile", 256, 256,
	    "native 256-bit AVX2 units; no AVX-512", 2, "FMA on ports 0 and 1", 4, "4-5", "12", "~42",
	    SRC_INTEL("ch. Skylake client") } },
	{ "GenuineIntel", 6, 0x9e, 0x9e, ALL_STEPPINGS,
	  { "Skylake (client)", "Kaby/Coffee Lake desktop, Xeon E-2100/2200", 256, 256,
	    "native 256-bit AVX2 units; no AVX-512", 2, "FMA on ports 0 and 1", 4, "4-5", "12", "~42",
	    SRC_INTEL("ch. Skylake client") } },
	{ "GenuineIntel", 6, 0xa5, 0xa6, ALL_STEPPINGS,
	  { "Skylake (client)", "Comet Lake", 256, 256, "native 256-bit AVX2 units; no AVX-512", 2,
	    "FMA on ports 0 and 1", 4, "4-5", "12", "~42", SRC_INTEL("ch. Skylake client") } },
	{ "GenuineIntel", 6, 0x55, 0x55, 0, 4,
	  { "Skylake-SP", "Xeon Scalable 1st gen", 512, 512,
	    "native 512-bit AVX-512 (ports 0+1 fused, and port 5 where present); heavy 512-bit code may lower "
	    "the clock",
	    2, "two 512-bit FMA units on Platinum and Gold 6xxx, one on most Silver, Bronze and Gold 5xxx", 4,
	    "4-5", "14", "~50-70 (mesh)", SRC_INTEL("ch. Skylake server") "; WikiChip: intel/microarchitectures/skylake_(server)" } },
	{ "GenuineIntel", 6, 0x55, 0x55, 5, 7,
	  { "Cascade Lake", "Xeon Scalable 2nd gen", 512, 512,
	    "native 512-bit AVX-512 (ports 0+1 fused, and port 5 where present); heavy 512-bit code may lower "
	    "the clock",
	    2, "two 512-bit FMA units on Platinum and Gold 6xxx, one on most Silver, Bronze and Gold 5xxx", 4,
	    "4-5", "14", "~50-70 (mesh)", SRC_INTEL("ch. Skylake server") "; WikiChip: intel/microarchitectures/cascade_lake" } },
	{ "GenuineIntel", 6, 0x55, 0x55, 10, 11,
	  { "Cooper Lake", "Xeon Scalable 3rd gen (4-8 sockets)", 512, 512,
	    "native 512-bit AVX-512 with BF16", 2, "two 512-bit FMA units", 4, "4-5", "14", "~50-70 (mesh)",
	    SRC_INTEL("ch. Skylake server") "; WikiChip: intel/microarchitectures/cooper_lake" } },
	{ "GenuineIntel", 6, 0x6a, 0x6a, ALL_STEPPINGS,
	  { "Ice Lake-SP", "Xeon Scalable 3rd gen", 512, 512, "native 512-bit AVX-512", 2,
	    "two 512-bit FMA units (ports 0+1 fused and port 5)", 4, "5", "14", "~70-80 (mesh)",
	    SRC_INTEL("ch. Ice Lake") "; Chips and Cheese, Intel's Ice Lake-SP articles" } },
	{ "GenuineIntel", 6, 0x6c, 0x6c, ALL_STEPPINGS,
	  { "Ice Lake-D", "Xeon D-1700/2700", 512, 512, "native 512-bit AVX-512", 2,
	    "two 512-bit FMA units on most parts", 4, "5", "14", "~70 (mesh)", SRC_INTEL("ch. Ice Lake") } },
	{ "GenuineIntel", 6, 0x7d, 0x7e, ALL_STEPPINGS,
	  { "Ice Lake (client)", "Core 10th gen mobile", 512, 512,
	    "AVX-512 with one 512-bit FMA unit (ports 0+1 fused): 512-bit FMA throughput equals 256-bit", 1,
	    "one 512-bit FMA unit, or two 256-bit", 4, "5", "13", "~40-45", SRC_INTEL("ch. Ice Lake") } },
	{ "GenuineIntel", 6, 0x8c, 0x8d, ALL_STEPPINGS,
	  { "Tiger Lake", "Core 11th gen", 512, 512,
	    "AVX-512 with one 512-bit FMA unit (ports 0+1 fused): 512-bit FMA throughput equals 256-bit", 1,
	    "one 512-bit FMA unit, or two 256-bit", 4, "5", "14", "~45-50", SRC_INTEL("ch. Ice Lake / Tiger Lake") } },
	{ "GenuineIntel", 6, 0x8f, 0x8f, ALL_STEPPINGS,
	  { "Sapphire Rapids", "Xeon Scalable 4th gen", 512, 512, "native 512-bit AVX-512, plus AMX tiles", 2,
	    "two 512-bit FMA units", 4, "5", "16", "~100-120 (mesh)",
	    SRC_INTEL("ch. Golden Cove / Sapphire Rapids") "; Chips and Cheese, Sapphire Rapids articles (2023)" } },
	{ "GenuineIntel", 6, 0xcf, 0xcf, ALL_STEPPINGS,
	  { "Emerald Rapids", "Xeon Scalable 5th gen", 512, 512, "native 512-bit AVX-512, plus AMX tiles", 2,
	    "two 512-bit FMA units", 4, "5", "16", "~100-120 (mesh)", SRC_INTEL("ch. Golden Cove / Sapphire Rapids") } },
	{ "GenuineIntel", 6, 0xad, 0xae, ALL_STEPPINGS,
	  { "Granite Rapids", "Xeon 6 P-core", 512, 512, "native 512-bit AVX-512, plus AMX tiles", 2,
	    "two 512-bit FMA units", 4, "5", "16", "~100-130 (mesh)",
	    SRC_INTEL("ch. Redwood Cove") "; Chips and Cheese, Granite Rapids articles (2024)" } },
	{ "GenuineIntel", 6, 0x97, 0x97, ALL_STEPPINGS,
	  { "Alder Lake (hybrid)", "Core 12th gen", 256, 256,
	    "256-bit AVX2 (AVX-512 disabled); P-cores Golden Cove, E-cores Gracemont run 256-bit code on 128-bit "
	    "units",
	    2, "P-core figures; E-cores differ", 4, "5", "15", "~60-70", SRC_INTEL("ch. Golden Cove / Gracemont") } },
	{ "GenuineIntel", 6, 0x9a, 0x9a, ALL_STEPPINGS,
	  { "Alder Lake (hybrid)", "Core 12th gen mobile", 256, 256,
	    "256-bit AVX2 (AVX-512 disabled); P-cores Golden Cove, E-cores Gracemont run 256-bit code on 128-bit "
	    "units",
	    2, "P-core figures; E-cores differ", 4, "5", "15", "~60-70", SRC_INTEL("ch. Golden Cove / Gracemont") } },
	{ "GenuineIntel", 6, 0xb7, 0xb7, ALL_STEPPINGS,
	  { "Raptor Lake (hybrid)", "Core 13th/14th gen", 256, 256,
	    "256-bit AVX2 (no AVX-512); P-cores Raptor Cove, E-cores Gracemont", 2, "P-core figures; E-cores differ",
	    4, "5", "16", "~60-75", SRC_INTEL("ch. Golden Cove / Gracemont") } },
	{ "GenuineIntel", 6, 0xba, 0xba, ALL_STEPPINGS,
	  { "Raptor Lake (hybrid)", "Core 13th gen mobile", 256, 256,
	    "256-bit AVX2 (no AVX-512); P-cores Raptor Cove, E-cores Gracemont", 2, "P-core figures; E-cores differ",
	    4, "5", "16", "~60-75", SRC_INTEL("ch. Golden Cove / Gracemont") } },
	{ "GenuineIntel", 6, 0xbf, 0xbf, ALL_STEPPINGS,
	  { "Raptor Lake (hybrid)", "Core 13th/14th gen", 256, 256,
	    "256-bit AVX2 (no AVX-512); P-cores Raptor Cove, E-cores Gracemont", 2, "P-core figures; E-cores differ",
	    4, "5", "16", "~60-75", SRC_INTEL("ch. Golden Cove / Gracemont") } },
	{ "GenuineIntel", 6, 0xaa, 0xac, ALL_STEPPINGS,
	  { "Meteor Lake (hybrid)", "Core Ultra 1st gen", 256, 256,
	    "256-bit AVX2 (no AVX-512); P-cores Redwood Cove, E-cores Crestmont", 2, "P-core figures; E-cores differ",
	    4, "5", "16", "~70-80", SRC_INTEL("ch. Redwood Cove / Crestmont") } },
	{ "GenuineIntel", 6, 0xaf, 0xaf, ALL_STEPPINGS,
	  { "Sierra Forest", "Xeon 6 E-core", 256, 128,
	    "E-cores (Crestmont): 256-bit AVX2 instructions split over 128-bit units; no AVX-512", 2,
	    "two 128-bit FMA pipes", 4, "3-4", "17-20 (shared by 4 cores)", "~100+ (mesh)",
	    SRC_INTEL("ch. Crestmont") } },
};

const struct pragma_uarch *pragma_uarch_lookup(const char *vendor, int family, int model, int stepping)
{
	if (!vendor)
		return NULL;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		if (!strcmp(r->vendor, vendor) && r->family == family && model >= r->model_lo &&
		    model <= r->model_hi && stepping >= r->stepping_lo && stepping <= r->stepping_hi)
			return &r->u;
	}
	return NULL;
}

static void clock_text(const struct pragma_machine *m, struct pragma_buf *out)
{
	pragma_buf_adds(out, "- Clock: ");
	if (m->max_mhz > 0) {
		pragma_buf_addf(out, "up to %.0f MHz (cpufreq)", m->max_mhz);
		if (m->base_mhz > 0)
			pragma_buf_addf(out, ", base %.0f MHz", m->base_mhz);
		if (m->cpu_mhz > 0)
			pragma_buf_addf(out, ", %.0f MHz when detected", m->cpu_mhz);
		pragma_buf_adds(out, "\n");
	} else if (m->cpu_mhz > 0) {
		pragma_buf_addf(out, "%.0f MHz by /proc/cpuinfo%s\n", m->cpu_mhz,
				m->hypervisor ? "; this is a virtual machine without cpufreq, so boost and all-core clocks "
						"are unknown (the figure is what the hypervisor reports)"
					      : "; no cpufreq, so boost clocks are unknown");
	} else {
		pragma_buf_adds(out, "unknown (no \"cpu MHz\" in /proc/cpuinfo, no cpufreq)\n");
	}
}

void pragma_machine_uarch_text(const struct pragma_machine *m, struct pragma_buf *out)
{
	const struct pragma_uarch *u = pragma_uarch_lookup(m->vendor, m->family, m->model, m->stepping);

	if (!u) {
		pragma_buf_addf(out, "- Micro-architecture: unknown to pragma (%s family %d model %d stepping %d): no "
				     "table row, so unit widths and latencies are not stated; the ISA flags and "
				     "measured peaks still hold\n",
				m->vendor, m->family, m->model, m->stepping);
		clock_text(m, out);
		return;
	}
	pragma_buf_addf(out, "- Micro-architecture: %s (%s family %d model %d: %s)\n", u->name, m->vendor, m->family,
			m->model, u->parts);
	pragma_buf_addf(out, "- Vectors: %d-bit ISA on %d-bit units: %s\n", u->vector_bits, u->datapath_bits,
			u->vector_note);
	pragma_buf_addf(out, "- FMA: %d unit%s per core (%s), latency %d cycles: a loop bound by FP "
			     "arithmetic needs at least %d independent accumulators to cover it (memory-bound "
			     "loops do not)\n",
			u->fma_units, u->fma_units == 1 ? "" : "s", u->fma_note ? u->fma_note : "", u->fma_latency,
			u->fma_units * u->fma_latency);
	pragma_buf_addf(out, "- Cache latency (load-to-use, cycles): L1 %s, L2 %s, L3 %s\n", u->l1_latency,
			u->l2_latency, u->l3_latency);
	clock_text(m, out);
	/* The clock the FMA units actually ran at, from the measured peak: a
	 * VM's "cpu MHz" is often the base clock, not the one kernels get. */
	if (m->peak_gflops_1core > 0 && u->fma_units > 0 && u->datapath_bits > 0) {
		double per_cycle = 2.0 * u->fma_units * (u->datapath_bits / 32);
		pragma_buf_addf(out,
				"- Sustained clock: about %.2f GHz, from the measured one-core FP32 peak (%.1f GFLOP/s at %.0f "
				"FLOP per cycle)\n",
				m->peak_gflops_1core / per_cycle, m->peak_gflops_1core, per_cycle);
	}
	pragma_buf_addf(out, "- Sources: %s\n", u->source);
}
