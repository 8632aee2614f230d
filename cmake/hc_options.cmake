# Build options of hybridcache. Every option is documented in README.md.
option(HC_WERROR "Treat compiler warnings as errors" OFF)
option(HC_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
# hybridcached --race-demo RULE: turns one ordering rule off on purpose so that hcsim must
# report mismatches (issue 6's self-test, ctest hcsim_race_demo). Turn it off for packages.
option(HC_RACE_DEMO "Build the hybridcached --race-demo flag (breaks correctness on request)" ON)
# HC_WITH_CUDA: default ON when nvcc is found (decided in hc_cuda.cmake).

if(HC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
