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

function(_rectrain_common target)
  target_compile_options(${target} PRIVATE ${RECTRAIN_WARNINGS})
endfunction()

# rectrain_cc_library(NAME x HDRS ... SRCS ... DEPS ...)  -> target rectrain_x, alias rectrain::x
function(rectrain_cc_library)
  cmake_parse_arguments(A "" "NAME" "HDRS;SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  set(t rectrain_${A_NAME})
  if(A_SRCS)
    add_library(${t} STATIC ${A_SRCS} ${A_HDRS})
    target_include_directories(${t} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${t} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
    _rectrain_common(${t})
  else()
    add_library(${t} INTERFACE)
    target_include_directories(${t} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${t} INTERFACE ${A_DEPS})
  endif()
  add_library(rectrain::${A_NAME} ALIAS ${t})
endfunction()

# rectrain_cc_test(NAME x SRCS ... DEPS ... [LABELS slow])
function(rectrain_cc_test)
  if(NOT RECTRAIN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
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
  _rectrain_common(${A_NAME})
endfunction()
