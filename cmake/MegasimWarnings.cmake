# megasim_set_warnings(target): the house warning set; errors when MEGASIM_WARNINGS_AS_ERRORS is on.
function(megasim_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
      -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
      -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough>)
  if(MEGASIM_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
