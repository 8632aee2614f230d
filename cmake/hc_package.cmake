# Installs the C++ client library as a CMake package, so a worker can write
#   find_package(hybridcache 0.1 REQUIRED)
#   target_link_libraries(worker PRIVATE hybridcache::client)
# The package holds the vocabulary (actors/common), the wire code and the client — nothing
# of the engine or the actors (package_consumer checks the installed header list).
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(HC_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hybridcache)
set(HC_CLIENT_EXPORTED hc_client hc_wire hc_shm hc_common hc_warnings)

install(TARGETS ${HC_CLIENT_EXPORTED} EXPORT hybridcacheTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache)
install(EXPORT hybridcacheTargets NAMESPACE hybridcache:: DESTINATION ${HC_PACKAGE_DIR})

# The public headers keep their source layout under include/hybridcache, so the
# project-relative includes inside them ("actors/common/status.hpp") resolve.
install(FILES ${PROJECT_SOURCE_DIR}/schema/client.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache/schema)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/actors/common/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hybridcache/actors/common
        FILES_MATCHING PATTERN "*.hpp")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hybridcacheConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/hybridcacheConfig.cmake
                              INSTALL_DESTINATION ${HC_PACKAGE_DIR})
# 0.x: minor versions may break the protocol vocabulary, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hybridcacheConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hybridcacheConfig.cmake
              ${PROJECT_BINARY_DIR}/hybridcacheConfigVersion.cmake
        DESTINATION ${HC_PACKAGE_DIR})
