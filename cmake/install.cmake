# Install rules: `cmake --install build --prefix P` (or `make install PREFIX=P`, DESTDIR
# honoured) puts the header, both libraries, pkg-config and CMake package files, the programs
# with their nccl-tests names, man pages and the Python package under P.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Where the Python package goes, relative to the prefix: Debian's python3 reads
# /usr/lib/python3/dist-packages, and /usr/local/lib/python3.X/dist-packages for /usr/local.
set(TUTTI_PYTHON_DIR "lib/python3/dist-packages" CACHE STRING
    "Python package directory, relative to the install prefix")

# The nccl-tests program names: symlinks to tutti-bench, which picks the collective from the
# name it was started by (args.c).
set(TUTTI_NCCL_TESTS_NAMES all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf
    reduce_perf alltoall_perf sendrecv_perf gather_perf scatter_perf)

install(FILES ${CMAKE_SOURCE_DIR}/include/tutti.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tutti EXPORT tuttiTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tutti_static EXPORT tuttiStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(tutti_static PROPERTIES EXPORT_NAME tutti_static)
# Installed programs find the installed libtutti.so next to them, wherever the prefix is.
file(RELATIVE_PATH lib_from_bin /P/${CMAKE_INSTALL_BINDIR} /P/${CMAKE_INSTALL_LIBDIR})
foreach(tool tutti-run tutti-bench tutti-info tutti-demo tutti-tune)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH "$ORIGIN/${lib_from_bin}")
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
if(TARGET tutti-bench)
  foreach(name ${TUTTI_NCCL_TESTS_NAMES})
    add_custom_command(TARGET tutti-bench POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -E create_symlink tutti-bench ${name}
                       WORKING_DIRECTORY ${CMAKE_RUNTIME_OUTPUT_DIRECTORY} VERBATIM)
    # A symlink installs as a symlink; its target is the tutti-bench next to it.
    install(FILES ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${name} DESTINATION ${CMAKE_INSTALL_BINDIR})
  endforeach()
endif()

# Man pages (hand-written, short; the programs' --help has every option). The nccl-tests
# names are .so links to tutti-bench(1), generated here.
file(GLOB TUTTI_MAN_PAGES ${CMAKE_SOURCE_DIR}/man/*.1)
install(FILES ${TUTTI_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
foreach(name ${TUTTI_NCCL_TESTS_NAMES})
  file(WRITE ${CMAKE_BINARY_DIR}/man/${name}.1 ".so man1/tutti-bench.1\n")
  install(FILES ${CMAKE_BINARY_DIR}/man/${name}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endforeach()

# pkg-config: written at install time, so the prefix is the one given to cmake --install
# (not the configure-time default). DESTDIR is not part of it, as it must not be.
set(pc_out ${CMAKE_BINARY_DIR}/pkgconfig/tutti.pc)
install(CODE "
  set(PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_SOURCE_DIR}/tutti.pc.in\" \"${pc_out}\" @ONLY)
")
install(FILES ${pc_out} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package: find_package(tutti) gives tutti::tutti (shared; -lcrypto stays private) and,
# when OpenSSL's development files are there, tutti::tutti_static.
set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)
install(EXPORT tuttiTargets NAMESPACE tutti:: DESTINATION ${cmake_dir})
install(EXPORT tuttiStaticTargets NAMESPACE tutti:: DESTINATION ${cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/tuttiConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/tuttiConfig.cmake
                              INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/tuttiConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/tuttiConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/tuttiConfigVersion.cmake DESTINATION ${cmake_dir})

# The Python package, and where it finds libtutti.so relative to itself (so a prefix outside
# the loader's path works without LD_LIBRARY_PATH; _lib.py reads it).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/bindings/python/tutti DESTINATION ${TUTTI_PYTHON_DIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
if(NOT IS_ABSOLUTE "${TUTTI_PYTHON_DIR}")
  file(RELATIVE_PATH lib_from_pkg /P/${TUTTI_PYTHON_DIR}/tutti /P/${CMAKE_INSTALL_LIBDIR})
  file(WRITE ${CMAKE_BINARY_DIR}/python/_installed.py
       "# Written by tutti's install rules: libtutti.so's directory relative to this package.\n"
       "LIBDIR_FROM_PACKAGE = \"${lib_from_pkg}\"\n")
  install(FILES ${CMAKE_BINARY_DIR}/python/_installed.py DESTINATION ${TUTTI_PYTHON_DIR}/tutti)
endif()
