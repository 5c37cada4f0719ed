// What a path on disk is, in words for error messages ("a directory", "a FIFO"), shared by the
// readers of input files (input_file.h) and the writers of outputs (output_files.h).
#pragma once

#include <string>

namespace megasim::scenarios {

// The kind of file a stat() mode describes: "a regular file", "a directory", "a FIFO", "a character
// device", "a block device", "a socket", "a symbolic link".
std::string path_kind(unsigned mode);

// The text of an error number, in lower case for the middle of a message ("no such file or
// directory", "permission denied").
std::string errno_text(int error);

}  // namespace megasim::scenarios
