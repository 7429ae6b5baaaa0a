#include "gemm_client.h"

#include <algorithm>
#include <chrono>

namespace gemmc {

std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {
      "OK",       "CANCELLED",          "UNKNOWN",      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "CODE_" + std::to_string(i);
}

GemmClient::GemmClient(const ClientOptions& options) : options_(options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  // dns:/// targets with several addresses spread calls over every replica.
  args.SetLoadBalancingPolicyName("round_robin");
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options_.use_tls || !options_.tls_ca.empty() || !options_.tls_cert.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.tls_ca;
    ssl.pem_cert_chain = options_.tls_cert;
    ssl.pem_private_key = options_.tls_key;
    credentials = grpc::SslCredentials(ssl);
    if (!options_.tls_server_name.empty()) args.SetSslTargetNameOverride(options_.tls_server_name);
  }
  channel_ = grpc::CreateCustomChannel(options_.target, credentials, args);
  stub_ = gemm::v1::GemmService::NewStub(channel_);
  health_ = grpc::health::v1::Health::NewStub(channel_);
}

void GemmClient::Prepare(grpc::ClientContext* ctx) const {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  if (options_.timeout_seconds > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(options_.timeout_seconds * 1e6)));
  }
}

grpc::Status GemmClient::Multiply(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->Multiply(&ctx, req, resp);
}

grpc::Status GemmClient::ListKernels(gemm::v1::ListKernelsResponse* resp) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->ListKernels(&ctx, {}, resp);
}

grpc::Status GemmClient::ListMatricesPage(const gemm::v1::ListMatricesRequest& req,
                                          gemm::v1::ListMatricesResponse* resp) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->ListMatrices(&ctx, req, resp);
}

grpc::Status GemmClient::ListMatrices(gemm::v1::ListMatricesResponse* resp) {
  resp->Clear();
  gemm::v1::ListMatricesRequest req;
  do {
    gemm::v1::ListMatricesResponse page;
    if (auto st = ListMatricesPage(req, &page); !st.ok()) return st;
    for (auto& m : *page.mutable_matrices()) *resp->add_matrices() = std::move(m);
    resp->set_used_bytes(page.used_bytes());
    resp->set_quota_bytes(page.quota_bytes());
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  return grpc::Status::OK;
}

grpc::Status GemmClient::Delete(const std::string& handle, uint64_t* freed) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  gemm::v1::DeleteMatrixRequest req;
  req.set_handle(handle);
  gemm::v1::DeleteMatrixResponse resp;
  grpc::Status st = stub_->DeleteMatrix(&ctx, req, &resp);
  if (freed) *freed = resp.freed_bytes();
  return st;
}

grpc::Status GemmClient::Upload(int64_t rows, int64_t cols, std::string_view bytes, const std::string& label,
                                gemm::v1::MatrixInfo* info, const Progress& progress, uint64_t chunk_bytes) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  auto writer = stub_->UploadMatrix(&ctx, info);
  if (chunk_bytes == 0) chunk_bytes = std::min<uint64_t>(4ull << 20, options_.max_message_bytes / 2);
  gemm::v1::UploadMatrixRequest msg;
  msg.mutable_header()->set_rows(rows);
  msg.mutable_header()->set_cols(cols);
  msg.mutable_header()->set_label(label);
  uint64_t offset = 0;
  do {
    const uint64_t len = std::min<uint64_t>(chunk_bytes, bytes.size() - offset);
    msg.set_data(bytes.data() + offset, len);
    if (!writer->Write(msg)) break;  // the server ended the call; Finish says why
    offset += len;
    msg.clear_header();
    if (progress) progress(offset, bytes.size());
  } while (offset < bytes.size());
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status GemmClient::Download(const std::string& handle, std::string* bytes, gemm::v1::MatrixInfo* info,
                                  const Progress& progress) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  gemm::v1::DownloadMatrixRequest req;
  req.set_handle(handle);
  req.set_chunk_bytes(std::min<uint64_t>(4ull << 20, options_.max_message_bytes / 2));
  auto reader = stub_->DownloadMatrix(&ctx, req);
  gemm::v1::MatrixChunk chunk;
  uint64_t total = 0;
  bytes->clear();
  while (reader->Read(&chunk)) {
    if (chunk.has_info()) {
      total = chunk.info().bytes();
      bytes->reserve(total);
      if (info) *info = chunk.info();
    }
    if (chunk.offset() != bytes->size()) {
      ctx.TryCancel();
      reader->Finish();
      return grpc::Status(grpc::StatusCode::DATA_LOSS, "download chunk out of order");
    }
    bytes->append(chunk.data());
    if (progress) progress(bytes->size(), total);
  }
  return reader->Finish();
}

grpc::Status GemmClient::Health(const std::string& service,
                                grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = health_->Check(&ctx, req, &resp);
  *status = resp.status();
  return st;
}

}  // namespace gemmc
