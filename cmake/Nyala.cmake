# Helpers shared by every src/ folder.

# Include roots. There is no global include path: a target sees "<module>/x.h" only
# for the modules whose libraries it links (each library publishes its own folder's
# root), and "<module>/x.pb.h" (and the generated .service.h/.proxy.h) through the
# proto libraries it links. So an include against DESIGN's direction (client or master
# including tserver code, rpc including server code) fails to compile.

# nyala_module_includes(<target> <module>...): gives <target>, and PUBLIC whatever
# links it, the include root of src/<module>: build/include/<module>, a directory
# holding only the symlink <module> -> src/<module>.
function(nyala_module_includes target)
  foreach(module ${ARGN})
    set(root ${CMAKE_BINARY_DIR}/include/${module})
    # Made afresh at every configure, so a moved source tree is followed.
    file(MAKE_DIRECTORY ${root})
    file(REMOVE ${root}/${module})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${module} ${root}/${module} SYMBOLIC)
    target_include_directories(${target} PUBLIC ${root})
  endforeach()
endfunction()

# nyala_proto(<target> <file.proto>...): generates C++ for the protos (imports are
# resolved from src/) and adds the sources to <target>. A .proto that declares a
# `service` also gets its typed server interface (<base>.service.h/.cc) and client
# proxy (<base>.proxy.h/.cc) from protoc-gen-nyalarpc (src/rpc/protoc_gen_nyalarpc_main.cc);
# <target> must then link nyala_rpc.
function(nyala_proto target)
  foreach(proto ${ARGN})
    get_filename_component(abs ${proto} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/src ${abs})
    string(REGEX REPLACE "\\.proto$" "" base ${rel})
    set(out_dir ${CMAKE_BINARY_DIR}/src)
    set(outputs ${out_dir}/${base}.pb.cc ${out_dir}/${base}.pb.h)
    set(plugin_args "")
    set(plugin_deps "")
    # Whether the file declares a service is read at configure time; editing the
    # .proto reconfigures.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${abs})
    file(STRINGS ${abs} services REGEX "^[ \t]*service[ \t]")
    if(services)
      list(APPEND outputs ${out_dir}/${base}.service.cc ${out_dir}/${base}.service.h
           ${out_dir}/${base}.proxy.cc ${out_dir}/${base}.proxy.h)
      set(plugin_args --plugin=protoc-gen-nyalarpc=$<TARGET_FILE:protoc-gen-nyalarpc>
                      --nyalarpc_out=${out_dir})
      set(plugin_deps protoc-gen-nyalarpc)
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${Protobuf_PROTOC_EXECUTABLE} --cpp_out=${out_dir} ${plugin_args}
              -I ${CMAKE_SOURCE_DIR}/src -I ${Protobuf_INCLUDE_DIRS} ${abs}
      DEPENDS ${abs} ${Protobuf_PROTOC_EXECUTABLE} ${plugin_deps}
      COMMENT "protoc ${rel}")
    target_sources(${target} PRIVATE ${outputs})
  endforeach()
  # The generated root holds generated files only (no hand-written header).
  target_include_directories(${target} PUBLIC ${CMAKE_BINARY_DIR}/src)
endfunction()

# nyala_proto_library(<name> <protos>... DEPS <libs>...): a library of generated
# protobuf code only, for folders whose protos other modules use (master, tserver).
function(nyala_proto_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  add_library(${name} STATIC)
  nyala_proto(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf ${ARG_DEPS})
endfunction()

# nyala_library(<name> [NO_PROTOS] DEPS <libs>...): a library from every *.cc in the
# current folder except tests (*-test.cc, *-itest.cc), mains (*_main.cc), fuzzers
# (*_fuzz.cc) and test helpers (test_util.cc, rtest*), plus every *.proto in the
# folder except rtest*.proto (test-only services). With NO_PROTOS the folder's
# protos are left to a nyala_proto_library.
function(nyala_library name)
  cmake_parse_arguments(ARG "NO_PROTOS" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "(-test|-itest|_main|_fuzz|test_util)\\.cc$")
  list(FILTER srcs EXCLUDE REGEX "/rtest[^/]*$")
  file(GLOB protos CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.proto)
  list(FILTER protos EXCLUDE REGEX "/rtest[^/]*$")
  add_library(${name} STATIC ${srcs})
  get_filename_component(module ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  nyala_module_includes(${name} ${module})
  if(protos AND NOT ARG_NO_PROTOS)
    nyala_proto(${name} ${protos})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# nyala_sanitizer_test_env(<test>): in a ThreadSanitizer build, runs <test> (and the
# daemons it starts, which inherit the environment) with the project's TSan options.
function(nyala_sanitizer_test_env test)
  if(NYALA_SANITIZE STREQUAL "thread")
    # Races outside our code (glog/glibc, RocksDB); see the file for each entry's
    # reason. detect_deadlocks=0: TSan's lock-order checker tracks at most 64 locks
    # held by one thread and aborts past that (a CHECK in its deadlock detector),
    # and a Write of a large row block holds one row lock per key stripe.
    set_tests_properties(${test} PROPERTIES ENVIRONMENT
      "TSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/scripts/tsan-suppressions.txt report_signal_unsafe=0 detect_deadlocks=0")
  endif()
endfunction()

# nyala_tests(DEPS <libs>... [LABELS <labels>...]): one gtest binary per *-test.cc
# in the current folder, registered with CTest under its file name.
function(nyala_tests)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*-test.cc
       ${CMAKE_CURRENT_SOURCE_DIR}/*-itest.cc)
  foreach(src ${tests})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} nyala_test_util nyala_test_main)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT 600)
    nyala_sanitizer_test_env(${name})
    if(ARG_LABELS)
      set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
    endif()
  endforeach()
endfunction()

# nyala_use_tcmalloc(<target>...): links each executable with tcmalloc when the build
# uses it (NYALA_TCMALLOC in the top CMakeLists.txt).
function(nyala_use_tcmalloc)
  if(TCMALLOC_LIB)
    foreach(target ${ARGN})
      target_link_libraries(${target} PRIVATE ${TCMALLOC_LIB})
    endforeach()
  endif()
endfunction()
