# The layer order of tools/layers.txt, enforced by the compiler: each unit's target has
# on its include path only a folder of links to the unit's own headers
# (<build>/layer_headers/<unit>/<folder>/<file>, named as src/ names them), and the
# targets it links bring theirs. A unit therefore sees its own headers and those of the
# units below it; an include that runs up the order, or into a unit it does not link,
# does not compile (tools/check_layers.py reports the same, with the reason).
#
# hetrec_layer_include_dir(<unit> <var>): the folder for <unit> (a name of the table).
set(HETREC_LAYER_HEADERS ${PROJECT_BINARY_DIR}/layer_headers)

# The table, read once: the unit names in order, "unit|folder/" entries and "unit|regex"
# entries for the file patterns (a `*` matches within one folder).
function(hetrec_read_layer_table)
  file(STRINGS ${PROJECT_SOURCE_DIR}/tools/layers.txt lines)
  set(units "")
  set(folders "")
  set(patterns "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*(#|$)")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
    list(GET fields 0 unit)
    list(GET fields 2 files)
    list(APPEND units ${unit})
    string(REPLACE "," ";" entries "${files}")
    foreach(e IN LISTS entries)
      if(e MATCHES "/$")
        list(APPEND folders "${unit}|${e}")
      else()
        string(REPLACE "." "\\." re "${e}")
        string(REPLACE "*" "[^/]*" re "${re}")
        list(APPEND patterns "${unit}|^${re}$")
      endif()
    endforeach()
  endforeach()
  set_property(GLOBAL PROPERTY HETREC_LAYER_UNITS "${units}")
  set_property(GLOBAL PROPERTY HETREC_LAYER_FOLDERS "${folders}")
  set_property(GLOBAL PROPERTY HETREC_LAYER_PATTERNS "${patterns}")
endfunction()

# hetrec_unit_of(<path below src/> <var>): the unit that owns a file, by the table's rule: the
# unit whose pattern names it, else the unit of the longest folder that holds it ("" if none).
function(hetrec_unit_of path var)
  get_property(folders GLOBAL PROPERTY HETREC_LAYER_FOLDERS)
  get_property(patterns GLOBAL PROPERTY HETREC_LAYER_PATTERNS)
  set(owner "")
  foreach(p IN LISTS patterns)
    string(REPLACE "|" ";" pair "${p}")
    list(GET pair 0 unit)
    list(GET pair 1 re)
    if(path MATCHES "${re}")
      set(${var} ${unit} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(longest 0)
  foreach(f IN LISTS folders)
    string(REPLACE "|" ";" pair "${f}")
    list(GET pair 0 unit)
    list(GET pair 1 folder)
    string(LENGTH "${folder}" n)
    string(SUBSTRING "${path}" 0 ${n} head)
    if(head STREQUAL folder AND n GREATER longest)
      set(owner ${unit})
      set(longest ${n})
    endif()
  endforeach()
  set(${var} "${owner}" PARENT_SCOPE)
endfunction()

function(hetrec_stage_layer_headers)
  set(src ${PROJECT_SOURCE_DIR}/src)
  hetrec_read_layer_table()
  get_property(units GLOBAL PROPERTY HETREC_LAYER_UNITS)
  set(HETREC_LAYER_UNITS ${units} PARENT_SCOPE)

  file(REMOVE_RECURSE ${HETREC_LAYER_HEADERS})
  foreach(unit IN LISTS units)
    file(MAKE_DIRECTORY ${HETREC_LAYER_HEADERS}/${unit})
  endforeach()
  # Re-globbed on every build: a new header gets its link without a manual re-configure.
  file(GLOB_RECURSE headers RELATIVE ${src} CONFIGURE_DEPENDS
       ${src}/*.h ${src}/*.hh ${src}/*.hpp ${src}/*.cuh ${src}/*.inl)
  foreach(h IN LISTS headers)
    hetrec_unit_of(${h} owner)
    if(NOT owner)
      message(FATAL_ERROR "src/${h}: no unit of tools/layers.txt holds it; add its folder or pattern to the table")
    endif()
    get_filename_component(dir ${h} DIRECTORY)
    file(MAKE_DIRECTORY ${HETREC_LAYER_HEADERS}/${owner}/${dir})
    file(CREATE_LINK ${src}/${h} ${HETREC_LAYER_HEADERS}/${owner}/${h} SYMBOLIC)
  endforeach()
endfunction()
hetrec_stage_layer_headers()

function(hetrec_layer_include_dir unit var)
  if(NOT unit IN_LIST HETREC_LAYER_UNITS)
    message(FATAL_ERROR "hetrec_layer_include_dir: '${unit}' is not a unit of tools/layers.txt")
  endif()
  set(${var} ${HETREC_LAYER_HEADERS}/${unit} PARENT_SCOPE)
endfunction()

# hetrec_tunable_sources(<unit> <var>): the .cpp and .cu files of the tunable kernel families'
# folders (src/tunable/<family>/) that the table gives to <unit>: one folder holds a family's
# kernel, variant space, cost model, bench and tuner adapter, and each part is compiled
# into the layer it belongs to.
function(hetrec_tunable_sources unit var)
  set(src ${PROJECT_SOURCE_DIR}/src)
  file(GLOB_RECURSE files RELATIVE ${src} CONFIGURE_DEPENDS ${src}/tunable/*.cpp ${src}/tunable/*.cu)
  set(result "")
  foreach(f IN LISTS files)
    hetrec_unit_of(${f} owner)
    if(owner STREQUAL unit)
      list(APPEND result ${src}/${f})
    endif()
  endforeach()
  set(${var} ${result} PARENT_SCOPE)
endfunction()

# The tunable kernel families' folders as tunable/tunable_folders.def on the tune unit's
# include path (HETREC_TUNE_GENERATED; cmake/tunable_folders.cmake).
set(HETREC_TUNE_GENERATED ${PROJECT_BINARY_DIR}/generated/tune)
include(${CMAKE_CURRENT_LIST_DIR}/tunable_folders.cmake)
hetrec_write_tunable_folders(${PROJECT_SOURCE_DIR}/src ${HETREC_TUNE_GENERATED})
