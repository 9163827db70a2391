//! Binding of LISVM's online learner, the `IncrementalLearner` class
//! ([`crate::incremental`]), pickled with its whole state.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::convert::{counts_u64, into_matrix, vec1, Flat, Kernel, SolverSettings};
use super::runner::{detached, inline};

use crate::incremental::{
    learn_many, Batch, LearnReport, LearnerState, ManyBatch, OnlineLearner, OnlineOptions,
    StepRecord,
};
use crate::runtime::control::Control;

/// What `IncrementalLearner.learn` returns: one entry per example, in the
/// order learnt, and the call's counts.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct LearnResult {
    /// False when the example was classified with margin.
    updated: Py<PyArray1<bool>>,
    /// Final working-set size (0 without an update).
    neighbourhood: Py<PyArray1<u64>>,
    /// Subproblems solved.
    n_solves: Py<PyArray1<u64>>,
    /// The stopping rule, not the neighbour cap, ended the growth.
    reached: Py<PyArray1<bool>>,
    /// `‖ξ‖² / t` after the example.
    criterion: Py<PyArray1<f64>>,
    /// Support vectors after the example.
    n_support: Py<PyArray1<u64>>,
    /// Examples kept after the example.
    n_stored: Py<PyArray1<u64>>,
    /// Seconds spent on the example.
    time: Py<PyArray1<f64>>,
    /// Examples that triggered an update.
    updates: usize,
    /// Updates that used every allowed neighbour before the stopping rule held.
    capped: usize,
    /// Subproblems solved in the call.
    solves: usize,
    /// Subproblems stopped by the iteration cap.
    unconverged: usize,
    /// The stream positions of the rows learnt, for `learn_many` (which
    /// picks each learner's rows itself); None from `learn`.
    seen: Option<Py<PyArray1<i64>>>,
    /// From `learn_many`: learner `k`'s entries are `offsets[k]` to
    /// `offsets[k + 1]` of each per-example array (the counts are the
    /// call's totals); None from `learn`.
    offsets: Option<Py<PyArray1<i64>>>,
}

/// The options of one learning call from its Python settings.
fn online_options(options: &LearnOptions, settings: Option<&SolverSettings>) -> OnlineOptions {
    let defaults = SolverSettings::default_values();
    let settings = settings.unwrap_or(&defaults);
    OnlineOptions {
        c: options.c,
        threshold: options.threshold,
        epsilon: options.epsilon,
        max_neighbors: options.max_neighbors,
        neighbor_step: options.neighbor_step,
        reprocess: options.reprocess,
        max_support: options.max_support,
        rebatch: options.rebatch,
        tol: settings.tol_value(),
        max_iter: settings.iteration_cap(),
        cache_bytes: settings.cache_bytes(),
        shrinking: settings.shrinking_value(),
        precision: settings.precision_value(),
        control: Control::none(),
    }
}

/// A learning call's report as its Python result.
fn learn_result(py: Python<'_>, rep: &LearnReport) -> LearnResult {
    learn_results(py, std::slice::from_ref(rep), None)
}

/// The reports of a `learn_many` call (or of one `learn` call, without
/// `seen`) as one Python result: each per-example array concatenated in
/// learner order (`offsets` says where each learner's entries are), the
/// counts added up. One result for all the learners, not one per learner:
/// a stream of small batches over many binary problems would otherwise
/// create hundreds of Python objects per batch (and wake the garbage
/// collector over the whole heap).
fn learn_results(
    py: Python<'_>,
    reps: &[LearnReport],
    seen: Option<(Vec<i64>, Vec<i64>)>,
) -> LearnResult {
    let all: Vec<StepRecord>;
    let st: &[StepRecord] = if let [rep] = reps {
        &rep.steps
    } else {
        all = reps.iter().flat_map(|r| r.steps.iter().copied()).collect();
        &all
    };
    let total = |f: fn(&LearnReport) -> usize| reps.iter().map(f).sum::<usize>();
    let (seen, offsets) = match seen {
        Some((seen, offsets)) => (Some(seen), Some(offsets)),
        None => (None, None),
    };
    let counts = |f: fn(&StepRecord) -> usize| -> Py<PyArray1<u64>> {
        counts_u64(st.iter().map(f)).into_pyarray(py).unbind()
    };
    LearnResult {
        updated: per_step(py, st, |s| s.updated),
        neighbourhood: counts(|s| s.neighbourhood),
        n_solves: counts(|s| s.n_solves),
        reached: per_step(py, st, |s| s.reached),
        criterion: per_step(py, st, |s| s.criterion),
        n_support: counts(|s| s.n_support),
        n_stored: counts(|s| s.n_stored),
        time: per_step(py, st, |s| s.seconds),
        updates: total(|r| r.updates),
        capped: total(|r| r.capped),
        solves: total(|r| r.solves),
        unconverged: total(|r| r.unconverged),
        seen: seen.map(|v| v.into_pyarray(py).unbind()),
        offsets: offsets.map(|v| v.into_pyarray(py).unbind()),
    }
}

/// The settings of LISVM's updates that `IncrementalLearner.learn` takes
/// besides the SMO settings; see `_core.pyi`.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct LearnOptions {
    c: f64,
    threshold: f64,
    epsilon: f64,
    max_neighbors: usize,
    neighbor_step: usize,
    max_support: Option<usize>,
    rebatch: bool,
    reprocess: usize,
}

#[pymethods]
impl LearnOptions {
    #[new]
    #[pyo3(signature = (
        c, threshold, *, epsilon = 0.5, max_neighbors = 50, neighbor_step = 1,
        max_support = None, rebatch = false, reprocess = 1
    ), text_signature = "(c, threshold, *, epsilon=0.5, max_neighbors=50, neighbor_step=1, \
        max_support=None, rebatch=False, reprocess=1)")]
    fn new(
        c: f64,
        threshold: f64,
        epsilon: f64,
        max_neighbors: usize,
        neighbor_step: usize,
        max_support: Option<usize>,
        rebatch: bool,
        reprocess: usize,
    ) -> Self {
        LearnOptions {
            c,
            threshold,
            epsilon,
            max_neighbors,
            neighbor_step,
            max_support,
            rebatch,
            reprocess,
        }
    }
}

/// One binary online SVM learnt by LISVM; see `_core.pyi`.
#[pyclass(module = "localsvm._core")]
pub(super) struct IncrementalLearner {
    inner: OnlineLearner,
    kernel: Py<Kernel>,
}

/// A required entry of a pickled learner's state.
fn state_item<'py>(state: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    state
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("the learner's state lacks {key:?}")))
}

fn state_vec<T: numpy::Element + Copy>(state: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<T>> {
    let item = state_item(state, key)?;
    let arr = item.cast::<PyArray1<T>>()?;
    Ok(arr.readonly().as_array().iter().copied().collect())
}

/// One value per step of a `learn` call, as an array.
fn per_step<T: numpy::Element>(
    py: Python<'_>,
    steps: &[StepRecord],
    f: fn(&StepRecord) -> T,
) -> Py<PyArray1<T>> {
    steps
        .iter()
        .map(f)
        .collect::<Vec<_>>()
        .into_pyarray(py)
        .unbind()
}

impl IncrementalLearner {
    /// `x`'s rows, checked against the learner's number of features.
    fn rows<'a>(&self, x: &'a PyReadonlyArray2<'_, f64>) -> PyResult<Flat<'a>> {
        let d = x.as_array().dim().1;
        if d != self.inner.d() {
            return Err(PyValueError::new_err(format!(
                "x has {d} features, but the learner was created for {}",
                self.inner.d()
            )));
        }
        Flat::new(x.as_array())
    }
}

#[pymethods]
impl IncrementalLearner {
    #[new]
    fn new(n_features: usize, kernel: Bound<'_, Kernel>) -> PyResult<Self> {
        Ok(IncrementalLearner {
            inner: OnlineLearner::new(kernel.get().kind(), n_features)?,
            kernel: kernel.unbind(),
        })
    }

    /// Learn the rows of `x` in order; see `_core.pyi`.
    #[pyo3(signature = (x, y, cls, seen, *, options, settings = None))]
    fn learn<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        y: PyReadonlyArray1<'py, f64>,
        cls: PyReadonlyArray1<'py, i64>,
        seen: PyReadonlyArray1<'py, i64>,
        options: PyRef<'py, LearnOptions>,
        settings: Option<PyRef<'py, SolverSettings>>,
    ) -> PyResult<LearnResult> {
        let opts = online_options(&options, settings.as_deref());
        let rebatch = opts.rebatch;
        let x = self.rows(&x)?;
        let (x, y, cls, seen) = (&x, vec1(y.as_array()), cls.as_array(), seen.as_array());
        let cls: Vec<i64> = cls.iter().copied().collect();
        let seen: Vec<i64> = seen.iter().copied().collect();
        let inner = &mut self.inner;
        let rep = if rebatch {
            // Long batch solves: on a pool thread, the caller answering
            // signals (they poll the control).
            detached(py, move |ctl| {
                let opts = OnlineOptions {
                    control: ctl.clone(),
                    ..opts
                };
                inner.learn(x.as_slice(), &y, &cls, &seen, &opts)
            })?
        } else {
            inline(py, move |poll| {
                let batch = Batch {
                    x: x.as_slice(),
                    y: &y,
                    cls: &cls,
                    seen: &seen,
                };
                inner.learn_polled(batch, &opts, poll)
            })?
        };
        Ok(learn_result(py, &rep))
    }

    /// Each learner of `learners` learns its rows of the batch `x` in
    /// order, all in one call; see `_core.pyi`.
    #[staticmethod]
    #[pyo3(signature = (learners, x, cls, seen, problems, *, options, settings = None, threads = 1))]
    #[allow(clippy::too_many_arguments)]
    fn learn_many<'py>(
        py: Python<'py>,
        learners: Vec<PyRefMut<'py, IncrementalLearner>>,
        x: PyReadonlyArray2<'py, f64>,
        cls: PyReadonlyArray1<'py, i64>,
        seen: PyReadonlyArray1<'py, i64>,
        problems: Vec<(i64, i64)>,
        options: PyRef<'py, LearnOptions>,
        settings: Option<PyRef<'py, SolverSettings>>,
        threads: usize,
    ) -> PyResult<LearnResult> {
        let opts = online_options(&options, settings.as_deref());
        if opts.rebatch {
            return Err(PyValueError::new_err(
                "learn_many does not run rebatch learners: call learn on each",
            ));
        }
        if problems.len() != learners.len() {
            return Err(PyValueError::new_err(format!(
                "problems has {} entries, expected one per learner ({})",
                problems.len(),
                learners.len()
            )));
        }
        let mut learners = learners;
        let d = match learners.first() {
            Some(lr) => lr.inner.d(),
            None => return Ok(learn_results(py, &[], Some((Vec::new(), vec![0])))),
        };
        if let Some(lr) = learners.iter().find(|lr| lr.inner.d() != d) {
            return Err(PyValueError::new_err(format!(
                "the learners were created for {} and {} features",
                d,
                lr.inner.d()
            )));
        }
        let x = learners[0].rows(&x)?;
        let cls: Vec<i64> = cls.as_array().iter().copied().collect();
        let seen: Vec<i64> = seen.as_array().iter().copied().collect();
        let m = cls.len();
        if seen.len() != m || x.as_slice().len() != m * d {
            return Err(PyValueError::new_err(format!(
                "x, cls and seen must have one row each, got {}, {} and {}",
                x.as_slice().len() / d.max(1),
                m,
                seen.len()
            )));
        }
        let mut inners: Vec<&mut OnlineLearner> =
            learners.iter_mut().map(|lr| &mut lr.inner).collect();
        let batch = ManyBatch {
            x: x.as_slice(),
            cls: &cls,
            seen: &seen,
            problems: &problems,
        };
        let reports = inline(py, |poll| {
            learn_many(&mut inners, &batch, &opts, threads, poll)
        })?;
        let mut offsets = vec![0i64];
        let mut all_seen = Vec::new();
        let mut reps = Vec::with_capacity(reports.len());
        for (rep, seen) in reports {
            all_seen.extend_from_slice(&seen);
            offsets.push(all_seen.len() as i64);
            reps.push(rep);
        }
        Ok(learn_results(py, &reps, Some((all_seen, offsets))))
    }

    /// `f(x)` for every row of `x`.
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = self.rows(&x)?;
        let (x, inner) = (&x, &self.inner);
        let f = detached(py, move |ctl| inner.decision_with(x.as_slice(), ctl))?;
        Ok(f.into_pyarray(py))
    }

    /// Storage positions of the support vectors.
    fn support<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let s: Vec<i64> = self.inner.support().into_iter().map(|i| i as i64).collect();
        s.into_pyarray(py)
    }

    #[getter]
    fn n_features(&self) -> usize {
        self.inner.d()
    }

    #[getter]
    fn kernel(&self) -> &str {
        self.kernel.get().label()
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.len()
    }

    #[getter(X)]
    fn x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        into_matrix(
            py,
            self.inner.x().to_vec(),
            self.inner.len(),
            self.inner.d(),
        )
    }

    #[getter]
    fn y<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.y().to_vec().into_pyarray(py)
    }

    #[getter]
    fn cls<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.cls().to_vec().into_pyarray(py)
    }

    #[getter]
    fn seen<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.seen().to_vec().into_pyarray(py)
    }

    #[getter]
    fn alpha<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.alpha().to_vec().into_pyarray(py)
    }

    #[getter]
    fn g<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.g().to_vec().into_pyarray(py)
    }

    #[getter]
    fn alive<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.inner.alive().to_vec().into_pyarray(py)
    }

    #[getter]
    fn b(&self) -> f64 {
        self.inner.bias()
    }

    #[getter]
    fn t(&self) -> u64 {
        self.inner.t()
    }

    #[getter]
    fn criterion(&self) -> f64 {
        self.inner.criterion()
    }

    #[getter]
    fn n_iter(&self) -> u64 {
        self.inner.n_iter()
    }

    #[getter]
    fn n_support(&self) -> usize {
        self.inner.n_support()
    }

    #[getter]
    fn n_alive(&self) -> usize {
        self.inner.n_alive()
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.state();
        let n = s.y.len();
        let d = self.inner.d();
        let out = PyDict::new(py);
        out.set_item("x", into_matrix(py, s.x, n, d)?)?;
        out.set_item("y", s.y.into_pyarray(py))?;
        out.set_item("cls", s.cls.into_pyarray(py))?;
        out.set_item("seen", s.seen.into_pyarray(py))?;
        out.set_item("alpha", s.alpha.into_pyarray(py))?;
        out.set_item("g", s.g.into_pyarray(py))?;
        out.set_item("alive", s.alive.into_pyarray(py))?;
        out.set_item("b", s.b)?;
        out.set_item("t", s.t)?;
        out.set_item("xi_sum", s.xi_sum)?;
        out.set_item("n_iter", s.n_iter)?;
        Ok(out)
    }

    fn __setstate__(&mut self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let x = state_item(state, "x")?;
        let x = x.cast::<PyArray2<f64>>()?.readonly();
        let x: Vec<f64> = x.as_array().iter().copied().collect();
        let st = LearnerState {
            x,
            y: state_vec(state, "y")?,
            cls: state_vec(state, "cls")?,
            seen: state_vec(state, "seen")?,
            alpha: state_vec(state, "alpha")?,
            g: state_vec(state, "g")?,
            alive: state_vec(state, "alive")?,
            b: state_item(state, "b")?.extract()?,
            t: state_item(state, "t")?.extract()?,
            xi_sum: state_item(state, "xi_sum")?.extract()?,
            n_iter: state_item(state, "n_iter")?.extract()?,
        };
        self.inner = OnlineLearner::from_state(self.inner.kind(), self.inner.d(), st)?;
        Ok(())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.borrow();
        let args = (me.inner.d(), me.kernel.clone_ref(py));
        let state = me.__getstate__(py)?;
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                args.into_pyobject(py)?.into_any(),
                state.into_any(),
            ],
        )
    }
}
