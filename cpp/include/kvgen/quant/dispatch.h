// Which kernels run: chosen once per process from the CPU's features (not from compile
// flags), or forced with KVGEN_CPU_PATH=avx512|avx2|portable.
#pragma once

#include <string>
#include <vector>

#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

enum class CpuPath { Portable, Avx2, Avx512 };

// "portable", "avx2", "avx512".
const char* cpu_path_name(CpuPath path);

// The path named `name`; ValueError listing the allowed names otherwise.
CpuPath parse_cpu_path(const std::string& name);

// The paths this CPU runs, best first: avx512 needs AVX-512 F/BW/VL + VNNI, avx2 needs
// AVX2 + FMA + F16C; portable always.
const std::vector<CpuPath>& supported_cpu_paths();

// `requested` (KVGEN_CPU_PATH's value; null or empty = the best of `supported`); ValueError
// if it names no path or one not in `supported`. Pure, so the tests can fake a CPU.
CpuPath choose_cpu_path(const char* requested, const std::vector<CpuPath>& supported);

// The process's path: choose_cpu_path(getenv("KVGEN_CPU_PATH"), supported_cpu_paths()),
// decided on first use (a bad KVGEN_CPU_PATH raises at every use).
CpuPath active_cpu_path();

// The kernels of `path`; ValueError if this CPU cannot run them.
const KernelTable& kernels_for(CpuPath path);

}  // namespace kvgen::quant
