# Declarative helpers: rectrain_cc_library(), rectrain_cc_test(), rectrain_cc_benchmark().
# Every target gets the project's warnings, sanitizers and include root (src/).

set(RECTRAIN_WARNINGS -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
    -Wno-unused-parameter -Wno-missing-field-initializers
    # GCC 12 reports impossible overlaps inside libstdc++'s std::string concatenation at -O2+
    # (GCC bug 105329); the warning fires in system headers on correct code.
    $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
if(RECTRAIN_WERROR)
  list(APPEND RECTRAIN_WARNINGS -Werror)
endif()

if(RECTRAIN_SANITIZE)
  add_compile_options(-fsanitize=${RECTRAIN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RECTRAIN_SANITIZE})
endif()
if(RECTRAIN_NATIVE)
  add_compile_options(-march=native)
endif()

# rectrain_mpi_test(<test>...): properties of a test whose processes mpiexec starts. Under
# AddressSanitizer, OpenMPI's own allocations still held at MPI_Finalize are reported as leaks
# (libmpi, libopen-pal, PMIx; without frame pointers, so they cannot be suppressed by stack), which
# would fail every such test. Leak checking is off for these processes only: address errors and
# undefined behaviour are still fatal, and the same rectrain code runs leak-checked in the
# in-process tests (dist_communicator_test, ps_test, dist_train_test).
function(rectrain_mpi_test)
  if(RECTRAIN_SANITIZE MATCHES "address")
    set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endfunction()

function(_rectrain_common target)
  target_compile_options(${target} PRIVATE ${RECTRAIN_WARNINGS})
endfunction()

# The module graph is enforced by what each target can #include. A library exposes only its own
# HDRS: they are linked into a per-target include root (build/include/<target>/rectrain/<module>/
# x.h -> src/rectrain/<module>/x.h), so a source file sees the headers of the libraries it lists
# in DEPS (transitively) and nothing else. A missing DEPS entry is a compile error
# ("rectrain/x/y.h: No such file or directory"), not a silent reach across the graph.
# _rectrain_header_root(<target> <out-var> <header>...) builds such a root from headers named
# relative to the current source directory.
function(_rectrain_header_root target out_root)
  set(root ${CMAKE_BINARY_DIR}/include/${target})
  file(REMOVE_RECURSE ${root})
  foreach(h IN LISTS ARGN)
    get_filename_component(abs ${h} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/src ${abs})
    if(rel MATCHES "^\\.\\.")
      message(FATAL_ERROR "${target}: header ${h} lies outside src/")
    endif()
    get_filename_component(dir ${root}/${rel} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${abs} ${root}/${rel} SYMBOLIC)
  endforeach()
  file(MAKE_DIRECTORY ${root})
  set(${out_root} ${root} PARENT_SCOPE)
endfunction()

# rectrain_private_headers(<target> <header>...): headers only <target> itself includes (the CLI's
# own commands.h, say), given the same per-target root.
function(rectrain_private_headers target)
  _rectrain_header_root(${target} root ${ARGN})
  target_include_directories(${target} PRIVATE ${root})
endfunction()

# Headers under internal/ are a library's own. They get a second root, given only to the library's
# sources, to the libraries, tests and benchmarks declared beside it (same CMakeLists directory: a
# module's test servers, say), and to the
# targets rectrain_internal_access() names, so `#include "rectrain/x/internal/y.h"` from anywhere
# else is a compile error ("No such file or directory") rather than a reach into another module.

# _rectrain_grant_internal(<target> <library>...): <target> sees the internal/ headers of each
# rectrain::<library> given.
function(_rectrain_grant_internal target)
  foreach(dep IN LISTS ARGN)
    if(TARGET ${dep})
      get_target_property(root ${dep} RECTRAIN_INTERNAL_ROOT)
      if(root)
        target_include_directories(${target} PRIVATE ${root})
      endif()
    endif()
  endforeach()
endfunction()

# _rectrain_grant_internal_beside(<target> <dep>...): the internal/ headers of those deps that
# are declared in the current CMakeLists directory (a module's own tests and benchmarks).
function(_rectrain_grant_internal_beside target)
  foreach(dep IN LISTS ARGN)
    if(TARGET ${dep})
      get_target_property(dir ${dep} RECTRAIN_SOURCE_DIR)
      if(dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
        _rectrain_grant_internal(${target} ${dep})
      endif()
    endif()
  endforeach()
endfunction()

# rectrain_internal_access(<target> <library>...): an exception to the rule above, for a target
# outside the module that must see its internals (a fuzzer of an internal parser, a benchmark that
# reads a generator's ground truth); say why where it is called.
function(rectrain_internal_access target)
  _rectrain_grant_internal(${target} ${ARGN})
endfunction()

# rectrain_cc_library(NAME x HDRS ... SRCS ... DEPS ...)  -> target rectrain_x, alias rectrain::x
function(rectrain_cc_library)
  cmake_parse_arguments(A "" "NAME" "HDRS;SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  set(t rectrain_${A_NAME})
  set(public_hdrs "")
  set(internal_hdrs "")
  foreach(h IN LISTS A_HDRS)
    if(A_SRCS AND h MATCHES "(^|/)internal/")
      list(APPEND internal_hdrs ${h})
    else()
      list(APPEND public_hdrs ${h})
    endif()
  endforeach()
  _rectrain_header_root(${t} root ${public_hdrs})
  if(A_SRCS)
    add_library(${t} STATIC ${A_SRCS} ${A_HDRS})
    target_include_directories(${t} PUBLIC ${root})
    target_link_libraries(${t} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
    _rectrain_common(${t})
    if(internal_hdrs)
      _rectrain_header_root(${t}.internal internal_root ${internal_hdrs})
      target_include_directories(${t} PRIVATE ${internal_root})
      set_target_properties(${t} PROPERTIES RECTRAIN_INTERNAL_ROOT ${internal_root})
    endif()
    _rectrain_grant_internal_beside(${t} ${A_DEPS} ${A_PRIVATE_DEPS})
  else()
    add_library(${t} INTERFACE)
    target_include_directories(${t} INTERFACE ${root})
    target_link_libraries(${t} INTERFACE ${A_DEPS})
  endif()
  set_target_properties(${t} PROPERTIES RECTRAIN_SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  add_library(rectrain::${A_NAME} ALIAS ${t})
endfunction()

# rectrain_cc_test(NAME x SRCS ... DEPS ... [LABELS slow] [INCLUDES dir...])
# INCLUDES: extra include directories (e.g. ${PROJECT_SOURCE_DIR} for tests/*.h helpers).
function(rectrain_cc_test)
  if(NOT RECTRAIN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;INCLUDES" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${A_NAME} PRIVATE ${A_INCLUDES})
  _rectrain_grant_internal_beside(${A_NAME} ${A_DEPS})
  _rectrain_common(${A_NAME})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  if(NOT A_LABELS)
    set(A_LABELS fast)
  endif()
  gtest_discover_tests(${A_NAME} DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS ${A_LABELS}
    ENVIRONMENT "RECTRAIN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# rectrain_cc_benchmark(NAME x SRCS ... DEPS ...)
function(rectrain_cc_benchmark)
  if(NOT RECTRAIN_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} benchmark::benchmark benchmark::benchmark_main)
  _rectrain_grant_internal_beside(${A_NAME} ${A_DEPS})
  _rectrain_common(${A_NAME})
endfunction()
