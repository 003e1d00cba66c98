// A minimal test harness for the C++ unit tests (no framework, as llama.cpp's
// tests/test-sampling.cpp): CHECK macros that report file:line with both values and
// count failures instead of aborting, so one run lists every broken expectation.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <iomanip>
#include <iostream>
#include <vector>

namespace kvgen::test {

inline int& failure_count() {
  static int count = 0;
  return count;
}

// Vectors print as [a, b, c], so a CHECK_EQ on rows shows both rows.
template <class T>
std::ostream& operator<<(std::ostream& os, const std::vector<T>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os << ']';
}

inline void fail_header(const char* file, int line) {
  ++failure_count();
  std::cerr << std::setprecision(9) << file << ':' << line << ": FAILED ";
}

template <class A, class B>
void check_eq(const A& actual, const B& expected, const char* actual_text, const char* expected_text,
              const char* file, int line) {
  if (actual == expected) return;
  fail_header(file, line);
  std::cerr << actual_text << " == " << expected_text << "\n  actual:   " << actual << "\n  expected: " << expected
            << '\n';
}

inline void check_near(double actual, double expected, double tolerance, const char* actual_text,
                       const char* expected_text, const char* file, int line) {
  // Infinities compare exactly; NaN never passes.
  if (actual == expected || std::fabs(actual - expected) <= tolerance) return;
  fail_header(file, line);
  std::cerr << actual_text << " ~= " << expected_text << " (within " << tolerance << ")\n  actual:   " << actual
            << "\n  expected: " << expected << '\n';
}

struct TestCase {
  const char* name;
  void (*run)();
};

// Runs every case (an exception fails the case, not the run) and prints one line per
// case; returns main's exit status: 0 when every check passed.
inline int run_all(std::initializer_list<TestCase> cases) {
  for (const TestCase& c : cases) {
    const int before = failure_count();
    try {
      c.run();
    } catch (const std::exception& e) {
      ++failure_count();
      std::cerr << c.name << ": unexpected exception: " << e.what() << '\n';
    }
    std::cout << (failure_count() == before ? "ok    " : "FAIL  ") << c.name << std::endl;
  }
  std::cout << failure_count() << " failed check(s)" << std::endl;
  return failure_count() == 0 ? 0 : 1;
}

}  // namespace kvgen::test

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      ::kvgen::test::fail_header(__FILE__, __LINE__);                \
      std::cerr << #cond << '\n';                                    \
    }                                                                \
  } while (0)

#define CHECK_EQ(actual, expected) ::kvgen::test::check_eq((actual), (expected), #actual, #expected, __FILE__, __LINE__)

#define CHECK_NEAR(actual, expected, tolerance) \
  ::kvgen::test::check_near((actual), (expected), (tolerance), #actual, #expected, __FILE__, __LINE__)

// Passes when `expr` throws `exception_type` (or a subclass).
#define CHECK_THROWS(expr, exception_type)                                                    \
  do {                                                                                        \
    bool thrown_ = false;                                                                     \
    try {                                                                                     \
      (void)(expr);                                                                           \
    } catch (const exception_type&) {                                                         \
      thrown_ = true;                                                                         \
    }                                                                                         \
    if (!thrown_) {                                                                           \
      ::kvgen::test::fail_header(__FILE__, __LINE__);                                         \
      std::cerr << #expr << " did not throw " << #exception_type << '\n';                     \
    }                                                                                         \
  } while (0)

#define TEST_CASE(fn) ::kvgen::test::TestCase{#fn, fn}
