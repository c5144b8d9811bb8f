//! The control calls a run makes around its measurement (AIPerf's): a wait until the
//! server answers, a KV-cache reset before measuring, the engine's profiler started before
//! and stopped after. Each is an HTTP call on the OpenAI server, read once here.

use std::time::Duration;

use crate::cli::AiperfServerArgs;
use inferperf_wire::error::{RunError, RunResult};

/// AIPerf's default timeout of a control call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// AIPerf's default pause between two readiness probes.
const PROBE_INTERVAL: Duration = Duration::from_secs(5);

/// How the wait for the server probes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `GET /v1/models` lists the model.
    Models,
    /// One short request is answered.
    Inference,
    /// The list, then a request.
    Both,
}

/// `--wait-for-model-timeout` and its companions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readiness {
    pub timeout: Duration,
    pub probe: Probe,
    pub interval: Duration,
}

/// One POST on the server: its path and timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlCall {
    pub path: String,
    pub timeout: Duration,
}

/// The control calls of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerHooks {
    pub readiness: Option<Readiness>,
    /// `--reset-kv-cache`: before measuring.
    pub reset_kv_cache: Option<ControlCall>,
    /// `--server-profiler`: started before measuring, stopped after.
    pub profiler: Option<(ControlCall, ControlCall)>,
}

impl ServerHooks {
    /// Whether any call is asked for.
    pub fn any(&self) -> bool {
        self.readiness.is_some() || self.reset_kv_cache.is_some() || self.profiler.is_some()
    }
}

/// Reads the control-call flags.
pub(super) fn parse(args: &AiperfServerArgs) -> RunResult<ServerHooks> {
    Ok(ServerHooks {
        readiness: readiness(args)?,
        reset_kv_cache: reset_kv_cache(args)?,
        profiler: profiler(args)?,
    })
}

fn readiness(args: &AiperfServerArgs) -> RunResult<Option<Readiness>> {
    let timeout = args.wait_for_model_timeout.unwrap_or(0.0);
    if timeout == 0.0 {
        if let Some(flag) = [
            ("--wait-for-model-mode", args.wait_for_model_mode.is_some()),
            (
                "--wait-for-model-interval",
                args.wait_for_model_interval.is_some(),
            ),
        ]
        .iter()
        .find(|(_, given)| *given)
        {
            return Err(RunError::bad_option(format!(
                "{} shapes the wait for the model, which --wait-for-model-timeout 0 (the default) turns off: add --wait-for-model-timeout SECONDS.",
                flag.0
            )));
        }
        return Ok(None);
    }
    let timeout = super::bounds::seconds_flag("--wait-for-model-timeout", timeout, 0.001)?;
    let probe = match args.wait_for_model_mode.as_deref().map(str::trim) {
        None | Some("inference") => Probe::Inference,
        Some("models") => Probe::Models,
        Some("both") => Probe::Both,
        Some(other) => {
            return Err(RunError::bad_option(format!(
                "--wait-for-model-mode '{other}' is not models, inference or both."
            )))
        }
    };
    let interval = match args.wait_for_model_interval {
        Some(s) => super::bounds::seconds_flag("--wait-for-model-interval", s, 0.001)?,
        None => PROBE_INTERVAL,
    };
    Ok(Some(Readiness {
        timeout,
        probe,
        interval,
    }))
}

fn reset_kv_cache(args: &AiperfServerArgs) -> RunResult<Option<ControlCall>> {
    let asked = args.reset_kv_cache
        || args.reset_kv_cache_path.is_some()
        || args.reset_kv_cache_timeout_seconds.is_some();
    if !asked {
        return Ok(None);
    }
    Ok(Some(ControlCall {
        path: path(
            args.reset_kv_cache_path.as_deref(),
            "/reset_prefix_cache",
            "--reset-kv-cache-path",
        )?,
        timeout: call_timeout(
            args.reset_kv_cache_timeout_seconds,
            "--reset-kv-cache-timeout-seconds",
        )?,
    }))
}

fn profiler(args: &AiperfServerArgs) -> RunResult<Option<(ControlCall, ControlCall)>> {
    let asked = args.server_profiler
        || args.server_profiler_timeout_seconds.is_some()
        || args.server_profiler_start_path.is_some()
        || args.server_profiler_stop_path.is_some();
    if !asked {
        return Ok(None);
    }
    let timeout = call_timeout(
        args.server_profiler_timeout_seconds,
        "--server-profiler-timeout-seconds",
    )?;
    let start = path(
        args.server_profiler_start_path.as_deref(),
        "/start_profile",
        "--server-profiler-start-path",
    )?;
    let stop = path(
        args.server_profiler_stop_path.as_deref(),
        "/stop_profile",
        "--server-profiler-stop-path",
    )?;
    Ok(Some((
        ControlCall {
            path: start,
            timeout,
        },
        ControlCall {
            path: stop,
            timeout,
        },
    )))
}

/// A relative path on the server (`/` added when missing), printable and without spaces.
fn path(given: Option<&str>, default: &str, flag: &str) -> RunResult<String> {
    let Some(text) = given.map(str::trim) else {
        return Ok(default.to_string());
    };
    let path = format!("/{}", text.trim_start_matches('/'));
    if text.contains("://") || path == "/" || !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(RunError::bad_option(format!(
            "{flag} '{text}' is not a path on the server: give one such as {default}."
        )));
    }
    Ok(path)
}

fn call_timeout(given: Option<f64>, flag: &str) -> RunResult<Duration> {
    match given {
        Some(s) => super::bounds::seconds_flag(flag, s, 0.001),
        None => Ok(CALL_TIMEOUT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_or_its_timeout_alone_asks_for_the_call() {
        let args = AiperfServerArgs {
            reset_kv_cache_path: Some("flush".into()),
            ..Default::default()
        };
        let hooks = parse(&args).unwrap();
        assert_eq!(
            hooks.reset_kv_cache,
            Some(ControlCall {
                path: "/flush".into(),
                timeout: CALL_TIMEOUT
            })
        );
        assert!(hooks.profiler.is_none() && hooks.readiness.is_none());
        let args = AiperfServerArgs {
            server_profiler: true,
            ..Default::default()
        };
        let (start, stop) = parse(&args).unwrap().profiler.unwrap();
        assert_eq!(
            (start.path.as_str(), stop.path.as_str()),
            ("/start_profile", "/stop_profile")
        );
    }

    #[test]
    fn the_wait_needs_its_timeout() {
        let args = AiperfServerArgs {
            wait_for_model_mode: Some("models".into()),
            ..Default::default()
        };
        let err = parse(&args).unwrap_err().to_string();
        assert!(err.contains("--wait-for-model-timeout SECONDS"), "{err}");
        let args = AiperfServerArgs {
            wait_for_model_timeout: Some(20.0),
            wait_for_model_mode: Some("both".into()),
            ..Default::default()
        };
        let wait = parse(&args).unwrap().readiness.unwrap();
        assert_eq!((wait.probe, wait.interval), (Probe::Both, PROBE_INTERVAL));
    }
}
