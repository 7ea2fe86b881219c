// A thin, thread-safe Kubernetes REST client on libcurl. Requests return the response body (JSON);
// failures are absl::Status values built by kube/status.h (HttpCode() recovers the HTTP code).
#ifndef PHALANX_KUBE_CLIENT_H_
#define PHALANX_KUBE_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kube/config.h"
#include "simdjson.h"

namespace phalanx::kube {

// A resource type: its API prefix ("/api/v1", "/apis/coordination.k8s.io/v1") and plural name.
struct Resource {
  absl::string_view api;
  absl::string_view plural;
  bool namespaced = true;
};
inline constexpr Resource kPods{"/api/v1", "pods", true};
inline constexpr Resource kNodes{"/api/v1", "nodes", false};
inline constexpr Resource kServices{"/api/v1", "services", true};
inline constexpr Resource kNamespaces{"/api/v1", "namespaces", false};
inline constexpr Resource kPriorityClasses{"/apis/scheduling.k8s.io/v1", "priorityclasses", false};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // Empty: a consistent (quorum) read.
  int64_t limit = 0;             // Page size; 0 means no paging.
  std::string continue_token;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // Start after this version; empty: synthetic ADDED events first.
  int timeout_seconds = 300;     // The server ends the watch after this long.
  // When set and true, the watch returns within about a second, with an OK status.
  const std::atomic<bool>* stop = nullptr;
};

enum class EventType { kAdded, kModified, kDeleted };

// How a watch ended. `status` is OK when the server closed the stream, `stop` was set, the handler
// returned false or the stream went quiet (ClientOptions::watch_idle_timeout); IsGone(status) means
// list again. `resource_version` is the last one seen (from events and bookmarks), to resume from.
struct WatchResult {
  absl::Status status;
  std::string resource_version;
  int64_t events = 0;  // Events and bookmarks received.
  absl::Duration lasted;

  // Ended cleanly at once with nothing received: a server or proxy that ends every watch so is
  // to be backed off from, not watched again in a tight loop (unless the caller stopped it).
  bool EndedAtOnce() const { return status.ok() && events == 0 && lasted < absl::Seconds(1); }
};

enum class PatchType { kMerge, kStrategicMerge, kJson };

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string uid_precondition;  // Delete only the object with this uid.
};

struct ClientOptions {
  absl::Duration request_timeout = absl::Seconds(30);  // Every request but watches.
  absl::Duration connect_timeout = absl::Seconds(10);
  // A watch that receives nothing for this long ends (its connection may be dead: a crashed
  // apiserver or a NAT that dropped the flow send no FIN). The apiserver sends a bookmark about
  // once a minute, so a healthy watch is rarely cut, and resuming one costs a request.
  absl::Duration watch_idle_timeout = absl::Seconds(90);
  std::string user_agent = "phalanx";
};

class Client {
 public:
  explicit Client(Config config, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Config& config() const { return config_; }

  // `ns` is ignored for cluster-scoped resources; empty lists and watches every namespace. Calls on
  // one object (Get, Patch, Delete, Bind) refuse an empty name (kInvalidArgument) before sending.
  absl::StatusOr<std::string> Get(const Resource& r, absl::string_view ns, absl::string_view name);
  // One page: a List object with metadata.resourceVersion and metadata.continue.
  absl::StatusOr<std::string> List(const Resource& r, absl::string_view ns,
                                   const ListOptions& options);
  // Every page, calling `on_item` for each item (the element dies after the call); an error from
  // `on_item` stops the list. Returns the list's resourceVersion, to watch from.
  absl::StatusOr<std::string> ListAll(
      const Resource& r, absl::string_view ns, ListOptions options,
      const std::function<absl::Status(simdjson::dom::element item)>& on_item);
  // Streams events (with allowWatchBookmarks; bookmarks only advance the resourceVersion) to
  // `on_event`, which returns false to stop. Blocks until the watch ends.
  WatchResult Watch(
      const Resource& r, absl::string_view ns, const WatchOptions& options,
      const std::function<bool(EventType type, simdjson::dom::element object)>& on_event);
  // GET of an object's subresource (a pod's "log") with query `params`, its 2xx body streamed to
  // `sink` chunk by chunk (false ends it). `timeout` bounds the whole transfer; `stop`, when set
  // and true, ends it within about a second. OK when the server closed the stream or it ended.
  absl::Status GetStream(const Resource& r, absl::string_view ns, absl::string_view name,
                         absl::string_view subresource,
                         const std::vector<std::pair<std::string, std::string>>& params,
                         absl::Duration timeout, const std::atomic<bool>* stop,
                         const std::function<bool(absl::string_view)>& sink);
  // Each returns the object the server answers with.
  absl::StatusOr<std::string> Create(const Resource& r, absl::string_view ns,
                                     absl::string_view json);
  absl::StatusOr<std::string> Patch(const Resource& r, absl::string_view ns, absl::string_view name,
                                    PatchType type, absl::string_view patch,
                                    absl::string_view subresource = "");
  absl::Status Delete(const Resource& r, absl::string_view ns, absl::string_view name,
                      const DeleteOptions& options = {});
  // Binds a pod to a node (POST pods/{pod}/binding). A non-empty `uid` makes the apiserver refuse a
  // different pod of the same name. A pod already bound to `node` is success; bound elsewhere,
  // kAborted (409).
  absl::Status Bind(absl::string_view ns, absl::string_view pod, absl::string_view node,
                    absl::string_view uid = "");

 private:
  struct State;
  struct Request;

  // Sends `request`; returns the body, or "" when a streaming sink consumed it.
  absl::StatusOr<std::string> Send(const Request& request);
  std::string BearerToken();

  const Config config_;
  const ClientOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace phalanx::kube

#endif  // PHALANX_KUBE_CLIENT_H_
