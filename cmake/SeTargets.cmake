# Common compile settings for every target of the project.
add_library(se_options INTERFACE)
# Host-compiler flags reach nvcc only through -Xcompiler, so each flag names its language.
set(se_cxx "$<COMPILE_LANGUAGE:CXX>")
target_compile_options(se_options INTERFACE $<${se_cxx}:-Wall -Wextra -Wno-unused-parameter>
                                            $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
target_include_directories(se_options INTERFACE ${PROJECT_SOURCE_DIR}/src)
if(SE_NATIVE)
  target_compile_options(se_options INTERFACE $<${se_cxx}:-march=native>)
else()
  target_compile_options(se_options INTERFACE $<${se_cxx}:-mavx2 -mfma -mf16c>)
endif()
if(SE_SANITIZE)
  target_compile_options(se_options INTERFACE
                         $<${se_cxx}:-fsanitize=${SE_SANITIZE} -fno-omit-frame-pointer>)
  target_link_options(se_options INTERFACE -fsanitize=${SE_SANITIZE})
endif()

# se_add_layer(<name> DEPS <targets...>): one static library per folder of src/ (its .cc and,
# in CUDA folders, .cu files).
function(se_add_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_link_libraries(${name} PUBLIC se_options ${ARG_DEPS})
  else()  # a layer of headers only
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE se_options ${ARG_DEPS})
  endif()
endfunction()

# se_add_test(<name> DEPS <targets...> [LABELS <labels...>] [SERIAL]): one gtest binary per tests/
# folder. Its tests carry the ctest label `unit` unless LABELS names others instead: tests that
# need a GPU say LABELS cuda, so that the CPU CI (ctest -LE cuda) never runs them. SERIAL: ctest
# runs each of its tests alone (nothing beside it under -j), for tests that take every GPU.
function(se_add_test name)
  cmake_parse_arguments(ARG "SERIAL" "" "DEPS;LABELS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE se_options ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE SE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  # Tests run side by side (ctest -j): OpenMP threads that busy-wait at barriers would steal the
  # cores their siblings need, so test processes wait passively.
  list(GET labels 0 first_label)
  gtest_discover_tests(${name} PROPERTIES LABELS ${first_label} ENVIRONMENT "OMP_WAIT_POLICY=passive"
                       DISCOVERY_TIMEOUT 60 TEST_LIST ${name}_TESTS)
  # PROPERTIES passes each list element as an argument of its own (a second label would become a
  # property name), so the whole list, and RUN_SERIAL, are set by a script that ctest reads after
  # the discovered tests.
  list(LENGTH labels num_labels)
  if(num_labels GREATER 1 OR ARG_SERIAL)
    set(extra "LABELS \"${labels}\"")
    if(ARG_SERIAL)
      string(APPEND extra " RUN_SERIAL TRUE")
    endif()
    set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake)
    file(WRITE ${script} "if(DEFINED ${name}_TESTS)\n"
                         "  set_tests_properties(\${${name}_TESTS} PROPERTIES ${extra})\n"
                         "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
  endif()
endfunction()
