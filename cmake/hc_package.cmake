# Installs the C++ client library as a CMake package, so a worker can write
#   find_package(hybridcache 0.1 REQUIRED)
#   target_link_libraries(worker PRIVATE hybridcache::client)
# The client's static archive needs the pure core archives it links (the command and
# instance vocabulary) and the generated wire code; all are exported with it.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(HC_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hybridcache)
set(HC_CLIENT_EXPORTED hc_client hc_wire hc_shm hc_scheduler hc_radix_cache hc_common hc_warnings)

install(TARGETS ${HC_CLIENT_EXPORTED} EXPORT hybridcacheTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache)
install(EXPORT hybridcacheTargets NAMESPACE hybridcache:: DESTINATION ${HC_PACKAGE_DIR})

# The public headers keep their source layout under include/hybridcache, so the
# project-relative includes inside them ("actors/common/status.hpp") resolve.
install(FILES ${PROJECT_SOURCE_DIR}/schema/client.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache/schema)
install(FILES ${PROJECT_SOURCE_DIR}/actors/node/jobs.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache/actors/node)
foreach(dir common radix_cache scheduler)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/actors/${dir}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache/actors/${dir}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*_actor.hpp" EXCLUDE)
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hybridcacheConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/hybridcacheConfig.cmake
                              INSTALL_DESTINATION ${HC_PACKAGE_DIR})
# 0.x: minor versions may break the protocol vocabulary, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hybridcacheConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hybridcacheConfig.cmake
              ${PROJECT_BINARY_DIR}/hybridcacheConfigVersion.cmake
        DESTINATION ${HC_PACKAGE_DIR})
