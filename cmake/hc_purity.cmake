# Pure targets (architecture.md §6): the index-plane logic links only the standard
# library (and other pure targets). hc_pure_library() declares one; the check at the
# end of configuration fails the build if any pure target links anything else.
set_property(GLOBAL PROPERTY HC_PURE_TARGETS "")

function(hc_pure_library name)
  add_library(${name} STATIC ${ARGN})
  set_property(GLOBAL APPEND PROPERTY HC_PURE_TARGETS ${name})
endfunction()

function(hc_check_pure_targets)
  get_property(pure GLOBAL PROPERTY HC_PURE_TARGETS)
  foreach(t IN LISTS pure)
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(libs ${t} ${prop})
      if(NOT libs)
        continue()
      endif()
      foreach(lib IN LISTS libs)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
        if(lib STREQUAL "hc_warnings" OR lib IN_LIST pure)
          continue()
        endif()
        message(FATAL_ERROR "pure target '${t}' links '${lib}': pure targets may link only "
                            "the standard library and other pure targets (architecture.md §6)")
      endforeach()
    endforeach()
  endforeach()
  list(LENGTH pure n)
  message(STATUS "hybridcache: ${n} pure targets link only the standard library")
endfunction()
