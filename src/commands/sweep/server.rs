//! The server a sweep starts for each setting: a shell command run in a process group of
//! its own (so that one signal reaches it and whatever it started, and the terminal's
//! Ctrl-C does not), its output captured to a log, a readiness check over plain HTTP, and a
//! stop that cannot hang: SIGTERM to the group, SIGKILL after a grace period.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::load::profiler::Interrupt;

/// How often the readiness check asks, and how long one try may take.
const READY_POLL: Duration = Duration::from_millis(100);
const READY_TRY: Duration = Duration::from_secs(1);

/// A running server command.
pub struct Server {
    child: Child,
    pgid: i32,
    log: PathBuf,
    /// The exit, once seen.
    status: Option<ExitStatus>,
}

/// How the wait for readiness ended.
#[derive(Debug)]
pub enum Waited {
    Ready(Duration),
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

impl Server {
    /// Runs `command` with `sh -c` in a new process group, standard output and error both
    /// appended to `log` (created anew).
    pub fn spawn(command: &str, log: &Path) -> std::io::Result<Server> {
        let out = std::fs::File::create(log)?;
        let err = out.try_clone()?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()?;
        let pgid = child
            .id()
            .map(|id| id as i32)
            .ok_or_else(|| std::io::Error::other("the server exited as it started"))?;
        Ok(Server {
            child,
            pgid,
            log: log.to_path_buf(),
            status: None,
        })
    }

    /// The process group (the id of the shell that runs the command).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The exit status, if the command has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits until `GET path` on `addr` answers 200, the command exits, `timeout` passes or
    /// Ctrl-C is pressed.
    pub async fn wait_ready(
        &mut self,
        addr: SocketAddr,
        path: &str,
        timeout: Duration,
        interrupt: &Interrupt,
    ) -> Waited {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return Waited::Exited(status);
            }
            if interrupt.is_raised() {
                return Waited::Interrupted;
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Waited::TimedOut;
            }
            if http_ok(addr, path, READY_TRY.min(left)).await {
                return Waited::Ready(start.elapsed());
            }
            interrupt.sleep(READY_POLL.min(left)).await;
        }
    }

    /// SIGTERM to the group, then SIGKILL to whatever is left after `grace`; waits for the
    /// shell to exit. Returns how the command ended, if it was still running.
    pub async fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let was_running = self.exited().is_none();
        signal_group(self.pgid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() && !group_alive(self.pgid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.exited().is_none() || group_alive(self.pgid) {
            signal_group(self.pgid, libc::SIGKILL);
        }
        let status = match self.status {
            Some(s) => s,
            None => {
                match tokio::time::timeout(grace.max(Duration::from_secs(1)), self.child.wait())
                    .await
                {
                    Ok(Ok(s)) => s,
                    _ => return None,
                }
            }
        };
        self.status = Some(status);
        was_running.then_some(status)
    }

    /// The last `n` lines of the server's output.
    pub fn log_tail(&self, n: usize) -> Vec<String> {
        log_tail(&self.log, n)
    }
}

/// The last `n` non-empty lines of a file (at most the last 64 KiB are read, each line cut
/// to 300 characters).
pub fn log_tail(path: &Path, n: usize) -> Vec<String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let from = bytes.len().saturating_sub(64 * 1024);
    let text = String::from_utf8_lossy(&bytes[from..]);
    let lines: Vec<String> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// Sends `signal` to every process of group `pgid`.
pub fn signal_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// Whether a process of group `pgid` is still there.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: as above; signal 0 only checks.
    pgid > 1 && unsafe { libc::kill(-pgid, 0) } == 0
}

/// `exit code 1`, `killed by signal 9`.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

/// `count` free loopback ports, all different (each held while the next is chosen).
pub fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// One `GET path` over HTTP/1.1: whether the answer's status is 200.
async fn http_ok(addr: SocketAddr, path: &str, timeout: Duration) -> bool {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 64];
        let mut got = 0;
        while got < 12 {
            let n = stream.read(&mut head[got..]).await.ok()?;
            if n == 0 {
                break;
            }
            got += n;
        }
        let line = std::str::from_utf8(&head[..got]).ok()?;
        Some(line.starts_with("HTTP/1.1 200") || line.starts_with("HTTP/1.0 200"))
    };
    matches!(tokio::time::timeout(timeout, attempt).await, Ok(Some(true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_that_exits_is_seen_and_its_output_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let mut server = Server::spawn("echo one; echo two >&2; exit 7", &log).unwrap();
        let interrupt = Interrupt::default();
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        match server
            .wait_ready(addr, "/", Duration::from_secs(10), &interrupt)
            .await
        {
            Waited::Exited(status) => assert_eq!(describe(status), "exit code 7"),
            other => panic!("{other:?}"),
        }
        assert_eq!(server.log_tail(5), ["one", "two"]);
        assert_eq!(server.log_tail(1), ["two"]);
        assert_eq!(server.stop(Duration::from_secs(1)).await, None);
    }

    #[tokio::test]
    async fn stop_ends_the_whole_group_even_when_sigterm_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        // The shell ignores SIGTERM, and so does the child it starts in the background.
        let mut server = Server::spawn("trap '' TERM; sleep 30 & sleep 30; wait", &log).unwrap();
        let interrupt = Interrupt::default();
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let waited = server
            .wait_ready(addr, "/", Duration::from_millis(300), &interrupt)
            .await;
        assert!(matches!(waited, Waited::TimedOut), "{waited:?}");
        let start = Instant::now();
        let status = server.stop(Duration::from_millis(300)).await.unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(describe(status), "killed by signal 9");
        // The background child dies too (once init has reaped it, the group is empty).
        let gone = Instant::now() + Duration::from_secs(5);
        while group_alive(server.pgid()) && Instant::now() < gone {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!group_alive(server.pgid()));
    }

    #[test]
    fn free_ports_differ() {
        let ports = free_ports(3).unwrap();
        assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
    }
}
