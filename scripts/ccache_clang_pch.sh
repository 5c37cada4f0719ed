#!/usr/bin/env bash
# The compiler launcher of the Clang build (scripts/test_sanitized.sh): ccache, after rewriting the
# arguments that name files under the build folder to paths relative to it. CMake hands Clang a
# precompiled header as `-Xclang -include -Xclang <build>/.../cmake_pch.hxx` (and -include-pch),
# arguments ccache's base_dir does not rewrite, so a clone in another folder missed every object
# (a warm CI's sanitized build took as long as a cold one). Compiles run in the build folder, where
# the relative paths name the same files.
prefix="$PWD/"
args=()
for arg in "$@"; do args+=("${arg#"$prefix"}"); done
exec ccache "${args[@]}"
