//! The Python bindings of [`crate::glue`]. Every call that simulates runs
//! with the GIL released (`Python::detach`), so Python threads run devices
//! in parallel; errors become `ZonelabError` (a `ValueError`) with the
//! messages the CLI prints, and a panic becomes one too instead of crossing
//! into Python.

use crate::glue;
use pyo3::create_exception;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

create_exception!(
    _native,
    ZonelabError,
    pyo3::exceptions::PyValueError,
    "An error zonelab reports (the CLI's message)."
);

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `work` without the GIL; its error or panic as a `ZonelabError`.
fn simulate<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, glue::GlueError> + Send) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(result) => result.map_err(|e| ZonelabError::new_err(e.to_string())),
        Err(payload) => Err(ZonelabError::new_err(format!(
            "internal error (a zonelab bug, please report it): {}",
            panic_message(payload.as_ref())
        ))),
    }
}

#[pyfunction]
fn presets() -> Vec<String> {
    glue::presets()
}

/// A device and its trace clock (`zonelab._native.Device`; use `zonelab.Device`).
#[pyclass(module = "zonelab._native", name = "Device", frozen)]
struct Device {
    session: Mutex<glue::Session>,
}

fn lock(session: &Mutex<glue::Session>) -> Result<std::sync::MutexGuard<'_, glue::Session>, glue::GlueError> {
    // A panic inside a command poisons the lock: the device's state is then unknown.
    session.lock().map_err(|_| glue::GlueError::Poisoned)
}

#[pymethods]
impl Device {
    #[new]
    fn new(py: Python<'_>, device_json: String) -> PyResult<Self> {
        let session = simulate(py, move || glue::Session::new(&device_json))?;
        Ok(Device { session: Mutex::new(session) })
    }

    fn submit(&self, py: Python<'_>, command_json: String) -> PyResult<String> {
        simulate(py, || lock(&self.session)?.submit(&command_json))
    }

    #[getter]
    fn clock_ns(&self, py: Python<'_>) -> PyResult<u64> {
        simulate(py, || Ok(lock(&self.session)?.clock_ns()))
    }

    fn config_toml(&self, py: Python<'_>) -> PyResult<String> {
        simulate(py, || Ok(lock(&self.session)?.config_toml()))
    }
}

#[pyfunction]
fn run_fio(
    py: Python<'_>,
    device_json: String,
    job_files: Vec<(String, String)>,
    fio_args: Vec<String>,
    seed: u64,
    scheduler: String,
    plus: bool,
) -> PyResult<String> {
    simulate(py, || glue::run_fio(&device_json, &job_files, &fio_args, seed, &scheduler, plus))
}

#[pyfunction]
fn fs_bench(py: Python<'_>, options_json: String) -> PyResult<String> {
    simulate(py, || glue::fs_bench(&options_json))
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn calibrate(
    py: Python<'_>,
    measurements: String,
    device_json: String,
    only: String,
    out: String,
    force: bool,
    runtime_ms: u64,
    threads: usize,
    fit: Vec<String>,
    folds: usize,
    max_evals: u64,
    fit_tail_weight: f64,
) -> PyResult<String> {
    let options = glue::CalibrateOptions { only, runtime_ms, threads, fit, folds, max_evals, fit_tail_weight };
    simulate(py, || glue::calibrate(&measurements, &device_json, &out, force, &options))
}

fn plan_options(only: String, runtime_ms: u64) -> glue::CalibrateOptions {
    glue::CalibrateOptions {
        only,
        runtime_ms,
        threads: 1,
        fit: Vec::new(),
        folds: 0,
        max_evals: 0,
        fit_tail_weight: 1.0,
    }
}

#[pyfunction]
fn calibrate_plan(
    py: Python<'_>,
    measurements: String,
    device_json: String,
    only: String,
    runtime_ms: u64,
) -> PyResult<Vec<String>> {
    let options = plan_options(only, runtime_ms);
    simulate(py, || glue::calibrate_plan(&measurements, &device_json, &options))
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn calibrate_render(
    py: Python<'_>,
    measurements: String,
    device_json: String,
    only: String,
    runtime_ms: u64,
    lines: Vec<String>,
    out: String,
    force: bool,
) -> PyResult<String> {
    let options = plan_options(only, runtime_ms);
    simulate(py, || glue::calibrate_render(&measurements, &device_json, &options, &lines, &out, force))
}

#[pyfunction]
#[pyo3(signature = (quick, fs_bytes=None, write_per_fs=None))]
fn znsplus_plan(
    py: Python<'_>,
    quick: bool,
    fs_bytes: Option<u64>,
    write_per_fs: Option<f64>,
) -> PyResult<Vec<String>> {
    simulate(py, || glue::znsplus_plan(quick, fs_bytes, write_per_fs))
}

#[pyfunction]
#[pyo3(signature = (lines, quick, fs_bytes=None, write_per_fs=None))]
fn znsplus_render(
    py: Python<'_>,
    lines: Vec<String>,
    quick: bool,
    fs_bytes: Option<u64>,
    write_per_fs: Option<f64>,
) -> PyResult<Vec<(String, String, String)>> {
    simulate(py, || glue::znsplus_render(quick, fs_bytes, write_per_fs, &lines))
}

#[pyfunction]
fn spec_key(py: Python<'_>, spec_json: String) -> PyResult<String> {
    simulate(py, || glue::spec_key(&spec_json))
}

#[pyfunction]
fn spec_needs(py: Python<'_>, spec_json: String) -> PyResult<Vec<String>> {
    simulate(py, || glue::spec_needs(&spec_json))
}

#[pyfunction]
#[pyo3(signature = (spec_json, needed=Vec::new()))]
fn run_spec(py: Python<'_>, spec_json: String, needed: Vec<String>) -> PyResult<String> {
    simulate(py, || glue::run_spec(&spec_json, &needed))
}

#[pyfunction]
fn characterization_plan(py: Python<'_>, quick: bool, only: String) -> PyResult<Vec<String>> {
    simulate(py, || glue::characterization_plan(quick, &only))
}

#[pyfunction]
fn characterization_render(py: Python<'_>, lines: Vec<String>, out: String, force: bool) -> PyResult<String> {
    simulate(py, || glue::characterization_render(&lines, &out, force))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ZonelabError", m.py().get_type::<ZonelabError>())?;
    m.add_class::<Device>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(run_fio, m)?)?;
    m.add_function(wrap_pyfunction!(fs_bench, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate_plan, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate_render, m)?)?;
    m.add_function(wrap_pyfunction!(znsplus_plan, m)?)?;
    m.add_function(wrap_pyfunction!(znsplus_render, m)?)?;
    m.add_function(wrap_pyfunction!(spec_key, m)?)?;
    m.add_function(wrap_pyfunction!(spec_needs, m)?)?;
    m.add_function(wrap_pyfunction!(run_spec, m)?)?;
    m.add_function(wrap_pyfunction!(characterization_plan, m)?)?;
    m.add_function(wrap_pyfunction!(characterization_render, m)?)?;
    Ok(())
}
