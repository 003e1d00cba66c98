// Run-time choice of the kernel path from the CPU's features (cpuid via
// __builtin_cpu_supports), so one binary is fast on AVX-512 and correct anywhere.
#include "kvgen/quant/dispatch.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#if defined(__linux__) && KVGEN_X86_KERNELS
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kvgen/errors.h"

namespace kvgen::quant {

namespace {

constexpr CpuPath kAll[] = {CpuPath::Amx, CpuPath::Avx512, CpuPath::Avx2, CpuPath::Portable};

#if defined(__linux__) && KVGEN_X86_KERNELS
// cpuid leaf 7's EDX bit (AMX-BF16 22, AMX-TILE 24, AMX-INT8 25).
bool cpuid7_edx(int bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << bit));
}
#endif

// "" when the tiles may run; otherwise why not. Asks Linux for the tile data permission once
// per process (the first tile instruction without it faults).
std::string check_amx() {
#if defined(__linux__) && KVGEN_X86_KERNELS
  if (!cpuid7_edx(24) || !cpuid7_edx(25)) return "the CPU has no AMX-INT8";
  constexpr long kReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kXtiledata = 18;         // XFEATURE_XTILEDATA
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) != 0)
    return std::string("Linux refused the AMX tile data permission (arch_prctl: ") + std::strerror(errno) + ")";
  return "";
#elif KVGEN_X86_KERNELS
  return "the AMX path needs Linux (its tile data permission)";
#else
  return "the CPU is not x86";
#endif
}

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
  if (avx512 && amx_unavailable_reason().empty()) paths.push_back(CpuPath::Amx);
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

// AMX-BF16 (the amx path's bf16 products), beside the AMX-INT8 that the path itself needs.
bool cpu_has_amx_bf16() {
#if defined(__linux__) && KVGEN_X86_KERNELS
  return cpuid7_edx(22);
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
    case CpuPath::Amx: return "amx";
  }
  return "?";
}

CpuPath parse_cpu_path(const std::string& name) {
  for (CpuPath p : kAll)
    if (name == cpu_path_name(p)) return p;
  throw ValueError("CPU path '" + name + "' is not one of amx, avx512, avx2, portable");
}

const std::string& amx_unavailable_reason() {
  static const std::string why = check_amx();
  return why;
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
    case CpuPath::Amx: {
      static const KernelTable table = [] {
        KernelTable t = amx_kernels();
        if (cpu_has_bf16()) t.bf16 = cpu_has_amx_bf16() ? amx_bf16_kernels() : bf16_kernels();
        return t;
      }();
      return table;
    }
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
    case CpuPath::Amx:
    case CpuPath::Avx512:
    case CpuPath::Avx2:
#endif
    case CpuPath::Portable: break;
  }
  static const KernelTable table = portable_kernels();
  return table;
}

}  // namespace kvgen::quant
