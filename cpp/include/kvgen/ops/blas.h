// The CBLAS calls of the core, and OpenBLAS's thread count, from the system's OpenBLAS or from
// scipy-openblas32 (whose symbols carry a scipy_ prefix: CMake's KVGEN_SCIPY_OPENBLAS defines
// KVGEN_BLAS_SCIPY_PREFIX).
#pragma once

#include <cblas.h>

#if defined(KVGEN_BLAS_SCIPY_PREFIX)
#define cblas_sgemm scipy_cblas_sgemm
#define cblas_sgemv scipy_cblas_sgemv
#define openblas_set_num_threads scipy_openblas_set_num_threads
#define openblas_get_num_threads scipy_openblas_get_num_threads
#endif
