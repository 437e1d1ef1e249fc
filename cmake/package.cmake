# `cpack -G DEB` (make deb): one package "tutti" with the library, header, pkg-config and
# CMake files, the programs, man pages and the Python package, installed under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tutti)
set(CPACK_PACKAGE_VENDOR "tutti")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "collective communication for CPU processes (shared memory and TCP), with Python and torch")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "tutti developers <tutti@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# libcrypto (libssl3) is the library's one dependency; the Python package needs numpy, and
# torch only for tutti.torch.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libssl3, python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libssl-dev")
# ldconfig through dpkg's trigger after install and removal (no postrm, so dpkg -r leaves
# the package not-installed rather than in config-files state); the byte code Python writes
# on import is removed before the files, so no directory is left behind.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/cmake/debian/prerm ${CMAKE_SOURCE_DIR}/cmake/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
