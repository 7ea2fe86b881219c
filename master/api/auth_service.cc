// AuthService and bearer-token authentication (see services.h).
#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "master/api/proto_convert.h"
#include "master/api/services.h"
#include "master/store/auth.h"

namespace phalanx::master {
namespace {

constexpr absl::Duration kTokenLifetime = absl::Hours(24 * 7);

}  // namespace

std::string Authenticator::BearerToken(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return "";
  const std::string value(it->second.data(), it->second.size());
  return absl::StartsWith(value, "Bearer ") ? value.substr(7) : "";
}

absl::StatusOr<User> Authenticator::Authenticate(const grpc::ServerContext& context) const {
  return AuthenticateToken(BearerToken(context));
}

absl::StatusOr<User> Authenticator::AuthenticateToken(const std::string& token) const {
  if (token.empty()) {
    return absl::UnauthenticatedError("missing \"authorization: Bearer <token>\"; log in first");
  }
  const std::string hash = TokenHash(token);
  const absl::Time now = now_();
  uint64_t forgets = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = trusted_.find(hash);
    if (it != trusted_.end() && it->second.second > now) return it->second.first;
    forgets = forgets_;
  }
  absl::StatusOr<User> user = store_.UserForToken(hash);
  if (user.ok()) {
    absl::MutexLock lock(&mu_);
    // A revocation since the store answered may have been of this token.
    if (forgets_ == forgets) Trust(hash, *user, now);
  }
  return user;
}

void Authenticator::Trust(const std::string& hash, const User& user, absl::Time now) const {
  trusted_[hash] = {user, now + kTrustFor};
  if (trusted_.size() <= sweep_above_) return;
  absl::erase_if(trusted_, [&](const auto& entry) { return entry.second.second <= now; });
  sweep_above_ = std::max(kSweepAbove, 2 * trusted_.size());
}

size_t Authenticator::trusted_count() const {
  absl::MutexLock lock(&mu_);
  return trusted_.size();
}

void Authenticator::Forget(const std::string& token) const {
  absl::MutexLock lock(&mu_);
  trusted_.erase(TokenHash(token));
  ++forgets_;
}

void Authenticator::ForgetUser(int64_t user_id) const {
  absl::MutexLock lock(&mu_);
  absl::erase_if(trusted_, [&](const auto& entry) { return entry.second.first.id == user_id; });
  ++forgets_;
}

absl::Status EnsureBuiltinUsers(Store& store, const std::string& default_password,
                                bool allow_empty_password,
                                const std::function<void(const std::string&)>& log) {
  const bool generate = default_password.empty() && !allow_empty_password;
  for (const auto& [name, admin] : {std::pair{"admin", true}, std::pair{"determined", false}}) {
    // Each generated password is the user's own: whoever is given determined's is not admin.
    const std::string password = generate ? NewToken().substr(0, 32) : default_password;
    absl::StatusOr<bool> made = store.EnsureUser(name, HashPassword(password), admin);
    if (!made.ok()) return made.status();
    if (*made && generate && log) {
      log(absl::StrCat("created user ", name, " with the generated password ", password,
                       " (shown only this once; set auth.default_password to choose one, or "
                       "change it with `phalanx user set-password`)"));
    }
  }
  return absl::OkStatus();
}

grpc::Status AuthServiceImpl::Login(grpc::ServerContext* ctx, const v1::LoginRequest* req,
                                    v1::LoginResponse* resp) {
  const std::string peer = ctx->peer();
  if (std::optional<absl::Duration> wait = limiter_.Attempt(req->username(), peer)) {
    const int64_t seconds =
        std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(*wait, absl::Seconds(1))));
    ctx->AddTrailingMetadata("retry-after", std::to_string(seconds));
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("too many failed logins for this user or from this address; "
                                     "retry after ",
                                     seconds, " s"));
  }
  // An unknown user costs a password check too, so that the time taken does not say which
  // users exist.
  static const std::string* const dummy_hash = new std::string(HashPassword(NewToken()));
  absl::StatusOr<StoredUser> user = store_.FindUser(req->username());
  if (!user.ok() && !absl::IsNotFound(user.status())) return ToGrpcStatus(user.status());
  const bool verified =
      VerifyPassword(req->password(), user.ok() ? user->password_hash : *dummy_hash);
  if (!user.ok() || !verified) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong username or password");
  }
  limiter_.Succeeded(req->username(), peer);
  const std::string token = NewToken();
  absl::Status s = store_.AddToken(TokenHash(token), user->user.id, absl::Now() + kTokenLifetime);
  if (!s.ok()) return ToGrpcStatus(s);
  resp->set_token(token);
  ToProto(user->user, resp->mutable_user());
  return grpc::Status::OK;
}

grpc::Status AuthServiceImpl::Logout(grpc::ServerContext* ctx, const v1::LogoutRequest*,
                                     v1::LogoutResponse*) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  const std::string token = Authenticator::BearerToken(*ctx);
  absl::Status deleted = store_.DeleteToken(TokenHash(token));
  auth_.Forget(token);
  return ToGrpcStatus(deleted);
}

grpc::Status AuthServiceImpl::CurrentUser(grpc::ServerContext* ctx, const v1::CurrentUserRequest*,
                                          v1::CurrentUserResponse* resp) {
  absl::StatusOr<User> user = auth_.Authenticate(*ctx);
  if (!user.ok()) return ToGrpcStatus(user.status());
  ToProto(*user, resp->mutable_user());
  return grpc::Status::OK;
}

grpc::Status AuthServiceImpl::CreateUser(grpc::ServerContext* ctx, const v1::CreateUserRequest* req,
                                         v1::CreateUserResponse* resp) {
  absl::StatusOr<User> caller = auth_.Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!caller->admin) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "only admins create users");
  }
  if (req->username().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "username: required");
  }
  if (req->password().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "password: required");
  }
  absl::StatusOr<User> user =
      store_.CreateUser(req->username(), HashPassword(req->password()), req->admin());
  if (!user.ok()) return ToGrpcStatus(user.status());
  ToProto(*user, resp->mutable_user());
  return grpc::Status::OK;
}

grpc::Status AuthServiceImpl::SetUserPassword(grpc::ServerContext* ctx,
                                              const v1::SetUserPasswordRequest* req,
                                              v1::SetUserPasswordResponse* resp) {
  absl::StatusOr<User> caller = auth_.Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  const std::string& username = req->username().empty() ? caller->username : req->username();
  if (username != caller->username && !caller->admin) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "only admins set another user's password");
  }
  if (req->password().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "password: required");
  }
  absl::StatusOr<User> user = store_.SetPassword(username, HashPassword(req->password()),
                                                 TokenHash(Authenticator::BearerToken(*ctx)));
  if (!user.ok()) return ToGrpcStatus(user.status());
  auth_.ForgetUser(user->id);
  ToProto(*user, resp->mutable_user());
  return grpc::Status::OK;
}

}  // namespace phalanx::master
