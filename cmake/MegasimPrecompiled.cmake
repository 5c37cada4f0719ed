# megasim_precompile_common_headers(TARGET): precompiles fmt and the standard headers that most of a
# library's files include, once per target instead of once per file. Measured with GCC 12 at -O3:
# straggler_report.cc 8.0 s -> 5.8 s, sweep_report.cc 6.8 s -> 4.6 s, for a 6.5 s header shared by
# the target's files. For targets of C++ sources only (not the CUDA backend); the headers stay
# included where used, so a build without precompiled headers (CMAKE_DISABLE_PRECOMPILE_HEADERS) compiles the same.
function(megasim_precompile_common_headers target)
  target_precompile_headers(${target} PRIVATE <fmt/format.h> <algorithm> <array> <cmath> <cstdint> <functional>
                            <map> <memory> <optional> <span> <string> <string_view> <vector>)
endfunction()

# megasim_reuse_common_headers(TARGET FROM): TARGET uses FROM's precompiled common headers instead of
# compiling its own. The compile definitions FROM's header was built with must all be TARGET's too
# (GCC refuses the header otherwise: -Winvalid-pch): the scenarios libraries above config share
# report's (config's has TOML++'s TOML_SHARED_LIB).
function(megasim_reuse_common_headers target from)
  target_precompile_headers(${target} REUSE_FROM ${from})
endfunction()
