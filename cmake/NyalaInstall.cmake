# What `cmake --install <build> --prefix P` puts under P, and the Debian packages
# `cpack` makes of it (in <build>: cpack --config CPackConfig.cmake), by component:
#   server      bin/nyala-master, bin/nyala-tserver, bin/nyala, share/nyala/conf/ and
#               share/nyala/scripts/ (start-cluster.sh and friends)  -> nyala-server
#   client      the shared library, libnyala_client.so.<major>[.<minor>.<patch>]
#                                                                    -> libnyala-client
#   client-dev  include/nyala/, libnyala_client.so and .a, nyala_client.pc and the
#               CMake package NyalaClient (find_package(NyalaClient): Nyala::client)
#                                                                    -> libnyala-client-dev
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS nyala-master nyala-tserver nyala RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT server)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/conf/ DESTINATION ${CMAKE_INSTALL_DATADIR}/nyala/conf
        COMPONENT server)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/scripts/start-cluster.sh
                 ${CMAKE_SOURCE_DIR}/scripts/stop-cluster.sh
                 ${CMAKE_SOURCE_DIR}/scripts/cluster-status.sh
                 ${CMAKE_SOURCE_DIR}/scripts/restart-daemon.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/nyala/scripts COMPONENT server)

install(TARGETS nyala_client_shared
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client NAMELINK_SKIP)
install(TARGETS nyala_client_shared
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client-dev NAMELINK_ONLY)
install(TARGETS nyala_client_static
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client-dev)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/nyala DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT client-dev FILES_MATCHING PATTERN "*.h")

# nyala_client.pc and the CMake package find the prefix from where they are installed,
# so the tree may be moved (or unpacked from the .deb into any root).
set(NYALA_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH NYALA_PC_TO_PREFIX /${NYALA_PC_DIR} /)
configure_file(${CMAKE_SOURCE_DIR}/cmake/nyala_client.pc.in
               ${CMAKE_BINARY_DIR}/nyala_client.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/nyala_client.pc DESTINATION ${NYALA_PC_DIR}
        COMPONENT client-dev)

set(NYALA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/NyalaClient)
file(RELATIVE_PATH NYALA_CMAKE_TO_PREFIX /${NYALA_CMAKE_DIR} /)
configure_file(${CMAKE_SOURCE_DIR}/cmake/NyalaClientConfig.cmake.in
               ${CMAKE_BINARY_DIR}/NyalaClientConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/NyalaClientConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/NyalaClientConfig.cmake
              ${CMAKE_BINARY_DIR}/NyalaClientConfigVersion.cmake
        DESTINATION ${NYALA_CMAKE_DIR} COMPONENT client-dev)

# Debian packages, one per component; dpkg-shlibdeps (dpkg-dev) finds the libraries'
# packages.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nyala)
set(CPACK_PACKAGE_VENDOR "The Nyala authors")
set(CPACK_PACKAGE_CONTACT "Nyala developers <nyala-dev@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Nyala, a distributed table store")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server client client-dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The packages carry stripped binaries (the build keeps its debug info).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME nyala-server)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION database)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "Nyala daemons (nyala-master, nyala-tserver), the nyala CLI, sample configuration and cluster scripts")
set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME libnyala-client${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_CLIENT_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_CLIENT_DESCRIPTION "Nyala C++ client library (shared)")
set(CPACK_DEBIAN_CLIENT-DEV_PACKAGE_NAME libnyala-client-dev)
set(CPACK_DEBIAN_CLIENT-DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_CLIENT-DEV_DESCRIPTION
    "Nyala C++ client SDK: headers, static library, pkg-config and CMake files")
set(CPACK_COMPONENT_CLIENT-DEV_DEPENDS client)
set(CPACK_DEBIAN_CLIENT-DEV_PACKAGE_DEPENDS
    "libprotobuf-dev, libevent-dev, libgoogle-glog-dev, libgflags-dev")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
include(CPack)
