# Build options of hybridcache. Every option is documented in README.md.
option(HC_WERROR "Treat compiler warnings as errors" OFF)
option(HC_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
# hybridcached --race-demo RULE: turns one ordering rule off on purpose so that hcsim must
# report mismatches (issue 6's self-test, ctest hcsim_race_demo). Turn it off for packages.
option(HC_RACE_DEMO "Build the hybridcached --race-demo flag (breaks correctness on request)" ON)
# HC_WITH_CUDA: default ON when nvcc is found (decided in hc_cuda.cmake).
# The Python package (tools/python): needs python3-dev, python3-pybind11, python3-numpy.
# Not with HC_SANITIZE: an ASan-built extension cannot load into a plain interpreter.
option(HC_WITH_PYTHON "Build the Python package hybridcache (tools/python)" ON)

if(HC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# HC_FUZZ: the libFuzzer targets of tests/fuzz (clang only; preset `fuzz`). Every source is
# built with coverage counters and ASan + UBSan, at -O1 with asserts on.
option(HC_FUZZ "Build the libFuzzer targets (tests/fuzz; clang; preset fuzz)" OFF)
if(HC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HC_FUZZ needs clang (cmake --preset fuzz sets it)")
  endif()
  add_compile_options(-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# HC_TSAN: ThreadSanitizer (preset `tsan`). Debian's CAF and kj are not instrumented, so
# TSan cannot see the synchronisation inside them: scripts/build-tsan-deps.sh builds both
# with TSan into HC_TSAN_DEPS, searched first. tests/tsan.supp lists what is suppressed in
# the other libraries (RocksDB, prometheus-cpp) and why.
option(HC_TSAN "Build with ThreadSanitizer (preset tsan)" OFF)
set(HC_TSAN_DEPS "${PROJECT_SOURCE_DIR}/build/tsan-deps/prefix" CACHE PATH
    "CAF and kj built with TSan (scripts/build-tsan-deps.sh)")
if(HC_TSAN)
  if(HC_SANITIZE)
    message(FATAL_ERROR "HC_TSAN and HC_SANITIZE cannot be combined")
  endif()
  if(EXISTS "${HC_TSAN_DEPS}/lib/libcaf_core.so" AND EXISTS "${HC_TSAN_DEPS}/lib/libkj.so")
    list(PREPEND CMAKE_PREFIX_PATH "${HC_TSAN_DEPS}")
    set(CMAKE_INSTALL_RPATH "${HC_TSAN_DEPS}/lib")  # installed binaries (package_consumer)
    message(STATUS "TSan: CAF and kj from ${HC_TSAN_DEPS}")
  else()
    message(WARNING "TSan: no ${HC_TSAN_DEPS}; run scripts/build-tsan-deps.sh first, or every "
                    "test that starts a node reports races inside Debian's CAF and kj")
  endif()
  add_compile_options(-O1 -g -fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# HC_COVERAGE: clang source-based coverage (preset `coverage`): every binary, the node and the
# Python extension write LLVM_PROFILE_FILE; scripts/coverage-report.sh runs the tests and
# prints the product's line / function / branch coverage.
option(HC_COVERAGE "Build with clang source-based coverage (preset coverage)" OFF)
if(HC_COVERAGE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HC_COVERAGE needs clang (cmake --preset coverage sets it)")
  endif()
  if(HC_SANITIZE OR HC_TSAN OR HC_FUZZ)
    message(FATAL_ERROR "HC_COVERAGE is not combined with the sanitizer or fuzz builds")
  endif()
  add_compile_options(-fprofile-instr-generate -fcoverage-mapping)
  add_link_options(-fprofile-instr-generate)
endif()
