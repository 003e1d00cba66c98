// Run-time choice of the kernel path from the CPU's features (cpuid via
// __builtin_cpu_supports), so one binary is fast on AVX-512 and correct anywhere.
#include "kvgen/quant/dispatch.h"

#include <algorithm>
#include <cstdlib>

#include "kvgen/errors.h"

namespace kvgen::quant {

namespace {

constexpr CpuPath kAll[] = {CpuPath::Avx512, CpuPath::Avx2, CpuPath::Portable};

std::vector<CpuPath> detect_cpu_paths() {
#if KVGEN_X86_KERNELS
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else  // aarch64, or a compiler without __builtin_cpu_supports (MSVC): the portable path
  const bool avx2 = false, avx512 = false;
#endif
  std::vector<CpuPath> paths;
  if (avx512) paths.push_back(CpuPath::Avx512);
  if (avx2) paths.push_back(CpuPath::Avx2);
  paths.push_back(CpuPath::Portable);
  return paths;
}

bool cpu_has_bf16() {
#if KVGEN_X86_KERNELS
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

std::string names(const std::vector<CpuPath>& paths) {
  std::string out;
  for (CpuPath p : paths) out += std::string(out.empty() ? "" : ", ") + cpu_path_name(p);
  return out;
}

}  // namespace

const char* cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::Portable: return "portable";
    case CpuPath::Avx2: return "avx2";
    case CpuPath::Avx512: return "avx512";
  }
  return "?";
}

CpuPath parse_cpu_path(const std::string& name) {
  for (CpuPath p : kAll)
    if (name == cpu_path_name(p)) return p;
  throw ValueError("CPU path '" + name + "' is not one of avx512, avx2, portable");
}

const std::vector<CpuPath>& supported_cpu_paths() {
  static const std::vector<CpuPath> paths = detect_cpu_paths();
  return paths;
}

CpuPath choose_cpu_path(const char* requested, const std::vector<CpuPath>& supported) {
  if (requested == nullptr || *requested == '\0') return supported.front();
  const CpuPath p = parse_cpu_path(requested);
  if (std::find(supported.begin(), supported.end(), p) == supported.end())
    throw ValueError(std::string("CPU path '") + requested + "' needs instructions this CPU lacks (it runs: " +
                     names(supported) + ")");
  return p;
}

CpuPath active_cpu_path() {
  static const CpuPath path = [] {
    try {
      return choose_cpu_path(std::getenv("KVGEN_CPU_PATH"), supported_cpu_paths());
    } catch (const ValueError& e) {
      throw ValueError(std::string("KVGEN_CPU_PATH: ") + e.what());
    }
  }();
  return path;
}

const KernelTable& kernels_for(CpuPath path) {
  // Every product of a decode step asks (hundreds a step): compare enums, and spell the
  // path out only to throw, if this CPU lacks it
  const std::vector<CpuPath>& supported = supported_cpu_paths();
  if (std::find(supported.begin(), supported.end(), path) == supported.end())
    choose_cpu_path(cpu_path_name(path), supported);  // throws
  // Each table is built on first use, so no code of a path runs before its check.
  switch (path) {
#if KVGEN_X86_KERNELS
    case CpuPath::Avx512: {
      static const KernelTable table = [] {
        KernelTable t = avx512_kernels();
        if (cpu_has_bf16()) t.bf16 = bf16_kernels();
        return t;
      }();
      return table;
    }
    case CpuPath::Avx2: {
      static const KernelTable table = avx2_kernels();
      return table;
    }
#else
    case CpuPath::Avx512:
    case CpuPath::Avx2:
#endif
    case CpuPath::Portable: break;
  }
  static const KernelTable table = portable_kernels();
  return table;
}

}  // namespace kvgen::quant
