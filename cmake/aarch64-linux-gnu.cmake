# Cross build of the C++ core and its unit tests for Linux aarch64 (the portable kernels) on an
# x86-64 Debian/Ubuntu machine, run under qemu-user. Needs: apt-get install g++-aarch64-linux-gnu
# qemu-user, and OpenBLAS for aarch64 from the scipy-openblas32 wheel (no multiarch packages):
#   pip download scipy-openblas32 --platform manylinux_2_28_aarch64 --only-binary :all: --no-deps -d /tmp/sob
#   python -m zipfile -e /tmp/sob/scipy_openblas32-*.whl /tmp/sob/pkg
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DKVGEN_BUILD_TESTS=ON \
#     -DKVGEN_NATIVE_ARCH=OFF -DKVGEN_SCIPY_OPENBLAS=ON -DKVGEN_SCIPY_OPENBLAS_DIR=/tmp/sob/pkg/scipy_openblas32
#   cmake --build build/aarch64 -j2 && ctest --test-dir build/aarch64 --output-on-failure
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)  # the target's OpenBLAS lies outside the sysroot
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)  # no host xtensor: the bundled headers
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
