// Which kernels run: chosen once per process from the CPU's features (not from compile
// flags), or forced with KVGEN_CPU_PATH=amx|avx512|avx2|portable.
#pragma once

#include <string>
#include <vector>

#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

// amx: the avx512 kernels, with the two-level products of several rows on AMX-INT8 tiles
// (kernels_amx.cpp; bit for bit the avx512 path's outputs).
enum class CpuPath { Portable, Avx2, Avx512, Amx };

// "portable", "avx2", "avx512", "amx".
const char* cpu_path_name(CpuPath path);

// The path named `name`; ValueError listing the allowed names otherwise.
CpuPath parse_cpu_path(const std::string& name);

// The paths this CPU runs, best first: amx needs avx512 and AMX-TILE + AMX-INT8, with Linux's
// permission for the tile data (asked once, arch_prctl(ARCH_REQ_XCOMP_PERM)); avx512 needs
// AVX-512 F/BW/VL + VNNI, avx2 needs AVX2 + FMA + F16C; portable always.
const std::vector<CpuPath>& supported_cpu_paths();

// `requested` (KVGEN_CPU_PATH's value; null or empty = the best of `supported`); ValueError
// if it names no path or one not in `supported`. Pure, so the tests can fake a CPU.
CpuPath choose_cpu_path(const char* requested, const std::vector<CpuPath>& supported);

// Why this process has no amx path ("" when it has one): the CPU lacks AMX-INT8, the system
// is not Linux, or Linux refused the tile data permission (its errno).
const std::string& amx_unavailable_reason();

// Whether `path` runs the avx512 kernels (amx does: it adds tile products to them).
inline bool runs_avx512(CpuPath path) { return path == CpuPath::Avx512 || path == CpuPath::Amx; }

// The process's path: choose_cpu_path(getenv("KVGEN_CPU_PATH"), supported_cpu_paths()),
// decided on first use (a bad KVGEN_CPU_PATH raises at every use).
CpuPath active_cpu_path();

// The kernels of `path`; ValueError if this CPU cannot run them.
const KernelTable& kernels_for(CpuPath path);

}  // namespace kvgen::quant
