# Debian 12's xsimd 8.1 target lists "xtl" in its link interface without
# defining that target (xsimd issue #869), so CMake links a nonexistent
# -lxtl. tandem does not use xsimd's xtl support; an empty target named xtl
# makes the link interface resolve to nothing.
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_tandem_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
  if("xtl" IN_LIST _tandem_xsimd_links)
    add_library(xtl INTERFACE IMPORTED GLOBAL)
  endif()
  unset(_tandem_xsimd_links)
endif()
