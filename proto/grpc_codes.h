// Names of gRPC status codes ("OK", "INVALID_ARGUMENT", ...), for messages and metric labels.
#ifndef PHALANX_PROTO_GRPC_CODES_H_
#define PHALANX_PROTO_GRPC_CODES_H_

namespace phalanx {

// The canonical name of gRPC status code `code`; "UNKNOWN_CODE" outside 0..16.
const char* GrpcCodeName(int code);

}  // namespace phalanx

#endif  // PHALANX_PROTO_GRPC_CODES_H_
