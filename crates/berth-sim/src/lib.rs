//! berth sim: rehearse a failure. A whole cluster (API server on an
//! in-memory store, scheduler, controllers, simulated nodes) runs a
//! scenario on a virtual clock and writes what happened.
pub mod components;
pub mod config;
pub mod duration;
pub mod scenario;
pub mod timeline;
