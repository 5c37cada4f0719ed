# Sanitizers and fuzzing (scripts/test_sanitized.sh builds a folder with both).
#  MEGASIM_SANITIZE: a -fsanitize= list for every target, e.g. "address,undefined"; any error
#    aborts the program (-fno-sanitize-recover), so a test that trips one fails.
#  MEGASIM_FUZZ: builds the libFuzzer targets of tests/fuzz (Clang only); the libraries get the
#    fuzzer's coverage instrumentation.
set(MEGASIM_SANITIZE "" CACHE STRING "Sanitizers for every target (-fsanitize=), e.g. address,undefined; empty: none")
option(MEGASIM_FUZZ "Build the libFuzzer targets (Clang)" OFF)
if(MEGASIM_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${MEGASIM_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${MEGASIM_SANITIZE})
endif()
if(MEGASIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEGASIM_FUZZ=ON needs Clang (libFuzzer); configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
