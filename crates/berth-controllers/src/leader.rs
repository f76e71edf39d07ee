//! Running a controller only while this server leads.
//!
//! Leader election itself is `berth-leader`'s (a Lease in `kube-system`);
//! this crate only obeys its signal: a `watch::Receiver<bool>` that reads
//! true while this process holds the lease. A controller starts when the
//! signal turns true and is dropped, mid-work, the moment it turns false,
//! so two servers sharing a store never both evict.

use std::future::Future;

use tokio::sync::watch;

/// Runs `controller()` each time leadership is gained, stopping it at once
/// when it is lost; returns when the signal's sender is gone.
pub async fn run_while_leading<F, Fut>(mut leading: watch::Receiver<bool>, mut controller: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if leading.wait_for(|l| *l).await.is_err() {
            return;
        }
        let lost = async {
            // Err: the sender is gone, which also ends leadership.
            let _ = leading.wait_for(|l| !*l).await;
        };
        tokio::select! {
            _ = controller() => {
                // The controller ended by itself; wait for the next term.
                let _ = leading.wait_for(|l| !*l).await;
            }
            _ = lost => {}
        }
        if leading.has_changed().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_controller_runs_only_while_leading() {
        let (tx, rx) = watch::channel(false);
        let starts = Arc::new(AtomicUsize::new(0));
        let ticks = Arc::new(AtomicUsize::new(0));
        let (s, t) = (starts.clone(), ticks.clone());
        let task = tokio::spawn(run_while_leading(rx, move || {
            let (s, t) = (s.clone(), t.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    t.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(starts.load(Ordering::SeqCst), 0, "not leading");
        let _ = tx.send(true);
        tokio::time::sleep(Duration::from_millis(5500)).await;
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        assert_eq!(ticks.load(Ordering::SeqCst), 5);
        let _ = tx.send(false);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 5, "stopped at once");
        let _ = tx.send(true);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            starts.load(Ordering::SeqCst),
            2,
            "runs again when re-elected"
        );
        drop(tx);
        let _ = task.await;
    }
}
