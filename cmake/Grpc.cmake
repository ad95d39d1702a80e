# gRPC for gpudoc serve's one call to the kubelet (PodResourcesLister.List: src/serve/pod_resources.cpp),
# from Debian 12's packages (cmake/debian-packages.txt): the C++ library without TLS
# (gRPC::grpc++_unsecure: a unix socket needs none), protobuf's lite runtime, protoc and its gRPC
# plugin for src/serve/podresources.proto.
#
#   gpudoc_grpc_library(TARGET PROTO)   a static library of PROTO's generated messages and stubs;
#                                       its users include "<name>.grpc.pb.h"
#
# The portable build links every library gRPC brings (gRPC, abseil, protobuf, upb, c-ares, re2,
# zlib) from the static archives the same packages ship, so that its binary still needs only the C
# library.
include_guard(GLOBAL)

gpudoc_find_package(Protobuf)
gpudoc_find_package(gRPC CONFIG)
gpudoc_find_program(GPUDOC_PROTOC protoc)
gpudoc_find_program(GPUDOC_GRPC_CPP_PLUGIN grpc_cpp_plugin)

# Points each imported library reachable from TARGET at the static archive beside its shared object
# (lib/libX.so.1.2 -> lib/libX.a); an archive that is missing is a configure error naming it.
function(_gpudoc_link_static_closure target)
  set(todo ${target})
  set(seen "")
  while(TRUE)
    # (a list is tested by its length: `while(todo)` reads a list ending in X-NOTFOUND as false)
    list(LENGTH todo left)
    if(left EQUAL 0)
      break()
    endif()
    list(POP_FRONT todo t)
    if(t IN_LIST seen OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      list(APPEND todo ${aliased})
      continue()
    endif()
    get_target_property(imported ${t} IMPORTED)
    get_target_property(type ${t} TYPE)
    if(NOT imported)
      continue()
    endif()
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      foreach(prop IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE IMPORTED_LOCATION_NOCONFIG)
        get_target_property(location ${t} ${prop})
        if(location AND location MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
          set(archive "${CMAKE_MATCH_1}.a")
          if(NOT EXISTS "${archive}")
            message(FATAL_ERROR "gpudoc: the portable build links ${archive} (for ${t}), which its -dev package ships; it is missing")
          endif()
          set_target_properties(${t} PROPERTIES ${prop} "${archive}")
        endif()
      endforeach()
    endif()
    get_target_property(deps ${t} INTERFACE_LINK_LIBRARIES)
    if(deps)
      # A library named by a flag (re2's pkg-config target: -lre2): its archive's path instead.
      set(rewritten "")
      foreach(d IN LISTS deps)
        if(d MATCHES "^-l(.+)$")
          set(archive "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/lib${CMAKE_MATCH_1}.a")
          if(EXISTS "${archive}")
            set(d "${archive}")
          endif()
        endif()
        list(APPEND rewritten "${d}")
        if(d MATCHES "^\\$<LINK_ONLY:(.*)>$")
          set(d "${CMAKE_MATCH_1}")
        endif()
        list(APPEND todo ${d})
      endforeach()
      set_target_properties(${t} PROPERTIES INTERFACE_LINK_LIBRARIES "${rewritten}")
    endif()
  endwhile()
endfunction()

if(GPUDOC_PORTABLE)
  _gpudoc_link_static_closure(gRPC::grpc++_unsecure)
  _gpudoc_link_static_closure(protobuf::libprotobuf-lite)
endif()

function(gpudoc_grpc_library target proto)
  get_filename_component(name "${proto}" NAME_WE)
  get_filename_component(proto_dir "${proto}" DIRECTORY)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(generated "${out}/${name}.pb.cc" "${out}/${name}.pb.h" "${out}/${name}.grpc.pb.cc" "${out}/${name}.grpc.pb.h")
  add_custom_command(
    OUTPUT ${generated}
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${out}"
    COMMAND "${GPUDOC_PROTOC}" "--proto_path=${proto_dir}" "--cpp_out=${out}" "--grpc_out=${out}"
            "--plugin=protoc-gen-grpc=${GPUDOC_GRPC_CPP_PLUGIN}" "${proto}"
    DEPENDS "${proto}"
    COMMENT "protoc: ${name}.proto"
    VERBATIM)
  add_library(${target} STATIC "${out}/${name}.pb.cc" "${out}/${name}.grpc.pb.cc")
  # Generated code: not gpudoc's warnings, and its headers as system headers for gpudoc's own files
  # (which compile with -Werror).
  target_include_directories(${target} SYSTEM PUBLIC "${out}")
  target_link_libraries(${target} PUBLIC gRPC::grpc++_unsecure protobuf::libprotobuf-lite)
endfunction()
