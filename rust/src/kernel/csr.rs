//! Compressed sparse rows (CSR) with their squared norms: the sparse
//! counterpart of [`super::Rows`].
//!
//! Kernel values between sparse rows come from dot products over the stored
//! entries only, always in `f64`, in one of two ways. Gather: a kernel
//! column `K(·, x_i)` scatters row `i` once into a dense scratch vector of
//! `d` values ([`CsrRows::scatter`]), then each `K(x_j, x_i)` is a gather
//! over row `j`'s stored entries ([`CsrRows::gather_dot`]), and the scratch
//! is cleared at the entries it touched ([`CsrRows::clear`]): `O(nnz)` work
//! per column and `O(d)` memory. Transpose: over the compressed columns
//! ([`Csc`]), row `i`'s features add their products into an accumulator of
//! `n` dot products ([`Csc::accumulate`]), touching only the rows that share
//! a feature with row `i` (for wide, very sparse data a small fraction of
//! `nnz`). Never `n × d`.

use std::sync::{Arc, OnceLock};

use super::kinds::KernelKind;
use crate::error::{checked_len, shape_error, try_with_capacity, value_error, Result};

/// A sparse row-major matrix: row `i` holds the values
/// `values[indptr[i]..indptr[i + 1]]` at the (strictly increasing) feature
/// indices `indices[indptr[i]..indptr[i + 1]]`.
#[derive(Clone, Debug)]
pub struct CsrRows {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
    d: usize,
    sq_norms: Vec<f64>,
    /// The transpose, built once at first use and shared by every kernel
    /// source over these rows ([`CsrRows::transpose`]).
    transpose: OnceLock<Option<Arc<Csc>>>,
}

/// What a failed copy of sparse input names as the way out.
const HINT: &str = "pass fewer rows at once";

impl CsrRows {
    /// Checks and copies a CSR matrix of `n` rows and `d` features given as
    /// scipy holds it (`indptr` of `n + 1` offsets, `indices` and `values` of
    /// `nnz` entries). Refused with [`crate::Error::Value`] or
    /// [`crate::Error::Shape`]: offsets that do not start at 0, decrease, or
    /// end elsewhere than at `nnz`; feature indices outside `[0, d)`, or not
    /// strictly increasing within a row (unsorted or duplicate entries: call
    /// scipy's `sum_duplicates()` first); non-finite values.
    pub fn from_parts(
        values: &[f64],
        indices: &[i64],
        indptr: &[i64],
        n: usize,
        d: usize,
    ) -> Result<Self> {
        if d as u64 > 1u64 << 32 {
            value_error!("a sparse X may have at most 2^32 features, got {d}");
        }
        if indptr.len() != n.saturating_add(1) {
            shape_error!(
                "the sparse matrix's indptr has {} entries, expected n_samples + 1 = {}",
                indptr.len(),
                n.saturating_add(1)
            );
        }
        if indices.len() != values.len() {
            shape_error!(
                "the sparse matrix has {} indices but {} values",
                indices.len(),
                values.len()
            );
        }
        let nnz = values.len();
        if indptr.first().copied() != Some(0) {
            value_error!("the sparse matrix's indptr must start at 0");
        }
        let what = format!("a copy of a sparse matrix with {n} rows and {nnz} stored values");
        let mut ptr = try_with_capacity::<usize>(n + 1, &what, HINT)?;
        let mut last = 0usize;
        for (r, &p) in indptr.iter().enumerate() {
            let p = match usize::try_from(p) {
                Ok(p) if p >= last && p <= nnz => p,
                _ => value_error!(
                    "the sparse matrix's indptr is not non-decreasing within [0, nnz = {nnz}] \
                     (entry {r} is {p}); it is not a valid CSR matrix"
                ),
            };
            ptr.push(p);
            last = p;
        }
        if last != nnz {
            value_error!(
                "the sparse matrix's indptr ends at {last}, but there are {nnz} stored values"
            );
        }
        let mut idx = try_with_capacity::<u32>(nnz, &what, HINT)?;
        for r in 0..n {
            let mut prev: Option<i64> = None;
            for &c in &indices[ptr[r]..ptr[r + 1]] {
                if c < 0 || (c as u64) >= d as u64 {
                    value_error!(
                        "the sparse matrix has column index {c} in row {r}, outside [0, {d}) \
                         for {d} features"
                    );
                }
                if prev.is_some_and(|p| p >= c) {
                    value_error!(
                        "the column indices of row {r} of the sparse matrix are not sorted or \
                         repeat; call sum_duplicates() and sort_indices() on it first"
                    );
                }
                prev = Some(c);
                idx.push(c as u32);
            }
        }
        if let Some(pos) = values.iter().position(|v| !v.is_finite()) {
            let row = ptr.partition_point(|&p| p <= pos) - 1;
            value_error!(
                "X contains NaN or infinity (a stored value of row {row}, column {})",
                idx[pos]
            );
        }
        let mut vals = try_with_capacity::<f64>(nnz, &what, HINT)?;
        vals.extend_from_slice(values);
        let mut sq_norms = try_with_capacity::<f64>(n, &what, HINT)?;
        sq_norms
            .extend((0..n).map(|r| vals[ptr[r]..ptr[r + 1]].iter().map(|v| v * v).sum::<f64>()));
        Ok(CsrRows {
            indptr: ptr,
            indices: idx,
            values: vals,
            d,
            sq_norms,
            transpose: OnceLock::new(),
        })
    }

    /// Number of rows.
    #[inline]
    pub fn n(&self) -> usize {
        self.sq_norms.len()
    }

    /// Number of features.
    #[inline]
    pub fn d(&self) -> usize {
        self.d
    }

    /// Number of stored values.
    #[inline]
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Row `i`: its feature indices and values.
    #[inline]
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.indptr[i], self.indptr[i + 1]);
        (&self.indices[a..b], &self.values[a..b])
    }

    /// Squared norm of row `i`.
    #[inline]
    pub fn sq_norm(&self, i: usize) -> f64 {
        self.sq_norms[i]
    }

    /// The largest squared row norm (0 without rows).
    pub fn max_sq_norm(&self) -> f64 {
        self.sq_norms.iter().fold(0.0f64, |m, &v| m.max(v))
    }

    /// The largest absolute stored value (0 without any).
    pub fn max_abs(&self) -> f64 {
        self.values.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// `⟨x_i, z_j⟩` for row `i` of `self` and row `j` of `other`, by merging
    /// their sorted indices.
    pub fn dot_rows(&self, i: usize, other: &CsrRows, j: usize) -> f64 {
        let (ia, va) = self.row(i);
        let (ib, vb) = other.row(j);
        let (mut a, mut b, mut sum) = (0usize, 0usize, 0.0f64);
        while a < ia.len() && b < ib.len() {
            match ia[a].cmp(&ib[b]) {
                std::cmp::Ordering::Less => a += 1,
                std::cmp::Ordering::Greater => b += 1,
                std::cmp::Ordering::Equal => {
                    sum += va[a] * vb[b];
                    a += 1;
                    b += 1;
                }
            }
        }
        sum
    }

    /// `K(x_i, z_j)` for row `i` of `self` and row `j` of `other`.
    #[inline]
    pub fn kernel(&self, kind: KernelKind, i: usize, other: &CsrRows, j: usize) -> f64 {
        kind.from_dot(
            self.dot_rows(i, other, j),
            self.sq_norm(i),
            other.sq_norm(j),
        )
    }

    /// Writes row `i` into the dense `scratch` (which must be all zeros, at
    /// least `d` long).
    #[inline]
    pub fn scatter(&self, i: usize, scratch: &mut [f64]) {
        let (idx, val) = self.row(i);
        for (&c, &v) in idx.iter().zip(val) {
            scratch[c as usize] = v;
        }
    }

    /// Zeroes the entries of `scratch` that [`CsrRows::scatter`] of row `i`
    /// wrote.
    #[inline]
    pub fn clear(&self, i: usize, scratch: &mut [f64]) {
        for &c in self.row(i).0 {
            scratch[c as usize] = 0.0;
        }
    }

    /// `⟨x_j, w⟩` for a dense `w` (a scattered row), over row `j`'s stored
    /// entries only.
    #[inline]
    pub fn gather_dot(&self, j: usize, w: &[f64]) -> f64 {
        let (idx, val) = self.row(j);
        let mut acc = [0.0f64; 4];
        let (ci, cv) = (idx.chunks_exact(4), val.chunks_exact(4));
        let tail: f64 = ci
            .remainder()
            .iter()
            .zip(cv.remainder())
            .map(|(&c, &v)| v * w[c as usize])
            .sum();
        for (c, v) in ci.zip(cv) {
            for l in 0..4 {
                acc[l] += v[l] * w[c[l] as usize];
            }
        }
        (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
    }

    /// A new matrix holding the listed rows, in that order.
    pub fn gather(&self, rows: &[usize]) -> Result<CsrRows> {
        let nnz: usize = rows
            .iter()
            .map(|&r| self.indptr[r + 1] - self.indptr[r])
            .sum();
        let what = format!("a copy of {} sparse rows ({nnz} stored values)", rows.len());
        let mut indptr = try_with_capacity::<usize>(rows.len() + 1, &what, HINT)?;
        let mut indices = try_with_capacity::<u32>(nnz, &what, HINT)?;
        let mut values = try_with_capacity::<f64>(nnz, &what, HINT)?;
        let mut sq_norms = try_with_capacity::<f64>(rows.len(), &what, HINT)?;
        indptr.push(0);
        for &r in rows {
            let (idx, val) = self.row(r);
            indices.extend_from_slice(idx);
            values.extend_from_slice(val);
            indptr.push(values.len());
            sq_norms.push(self.sq_norms[r]);
        }
        Ok(CsrRows {
            indptr,
            indices,
            values,
            d: self.d,
            sq_norms,
            transpose: OnceLock::new(),
        })
    }

    /// The transpose ([`Csc::of`]), built at the first call and shared by
    /// later ones (the binary problems of a fit over the same rows).
    pub fn transpose(&self) -> Result<Option<Arc<Csc>>> {
        if let Some(t) = self.transpose.get() {
            return Ok(t.clone());
        }
        let t = Csc::of(self)?.map(Arc::new);
        // Another thread may have set it meanwhile: either copy serves.
        let _ = self.transpose.set(t.clone());
        Ok(t)
    }

    /// The dense row-major copy (`n × d`), for tests and small matrices.
    pub fn to_dense(&self) -> Result<Vec<f64>> {
        let what = format!("a dense copy of {} × {} sparse rows", self.n(), self.d);
        let len = checked_len::<f64>(self.n(), self.d, &what, HINT)?;
        let mut out = crate::error::try_filled(len, 0.0, &what, HINT)?;
        for i in 0..self.n() {
            self.scatter(i, &mut out[i * self.d..(i + 1) * self.d]);
        }
        Ok(out)
    }
}

/// The transpose of a [`CsrRows`] (compressed sparse columns): for each
/// feature, the rows that store it and their values. With it a kernel
/// column costs only the products that are not zero: `Σ_f nnz(column f)`
/// over the features `f` of the column's row, instead of every row's
/// stored entries ([`Csc::accumulate`]).
#[derive(Clone, Debug)]
pub struct Csc {
    colptr: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<f64>,
}

impl Csc {
    /// The transpose of `m`, or `None` when its rows cannot be numbered in
    /// 32 bits (then only the gather path is used).
    pub fn of(m: &CsrRows) -> Result<Option<Csc>> {
        if u32::try_from(m.n()).is_err() {
            return Ok(None);
        }
        let (d, nnz) = (m.d(), m.nnz());
        let what = format!("the transpose of a sparse matrix with {nnz} stored values");
        let mut colptr = crate::error::try_filled(d + 1, 0usize, &what, HINT)?;
        for &c in &m.indices {
            colptr[c as usize + 1] += 1;
        }
        for f in 0..d {
            colptr[f + 1] += colptr[f];
        }
        let mut next = crate::error::try_with_capacity::<usize>(d, &what, HINT)?;
        next.extend_from_slice(&colptr[..d]);
        let mut rows = crate::error::try_filled(nnz, 0u32, &what, HINT)?;
        let mut values = crate::error::try_filled(nnz, 0.0f64, &what, HINT)?;
        for r in 0..m.n() {
            let (idx, val) = m.row(r);
            for (&c, &v) in idx.iter().zip(val) {
                let at = &mut next[c as usize];
                rows[*at] = r as u32;
                values[*at] = v;
                *at += 1;
            }
        }
        Ok(Some(Csc {
            colptr,
            rows,
            values,
        }))
    }

    /// The products `accumulate` would compute for the sparse vector with
    /// feature indices `idx`.
    #[inline]
    pub fn cost(&self, idx: &[u32]) -> usize {
        idx.iter()
            .map(|&c| self.colptr[c as usize + 1] - self.colptr[c as usize])
            .sum()
    }

    /// `acc[t] += ⟨x, z_t⟩` for every row `t` of the transposed matrix, `x`
    /// the sparse vector `(idx, val)`; only rows that share a feature with
    /// `x` are touched.
    #[inline]
    pub fn accumulate(&self, idx: &[u32], val: &[f64], acc: &mut [f64]) {
        for (&c, &v) in idx.iter().zip(val) {
            let (a, b) = (self.colptr[c as usize], self.colptr[c as usize + 1]);
            for (&t, &u) in self.rows[a..b].iter().zip(&self.values[a..b]) {
                acc[t as usize] += v * u;
            }
        }
    }

    /// Zeroes the entries of `acc` that [`Csc::accumulate`] of `idx` touched.
    #[inline]
    pub fn clear(&self, idx: &[u32], acc: &mut [f64]) {
        for &c in idx {
            let (a, b) = (self.colptr[c as usize], self.colptr[c as usize + 1]);
            for &t in &self.rows[a..b] {
                acc[t as usize] = 0.0;
            }
        }
    }
}

/// A dense scratch vector of `d` zeros for [`CsrRows::scatter`], allocated
/// with its failure an [`crate::Error::Memory`].
pub fn scratch(d: usize) -> Result<Vec<f64>> {
    crate::error::try_filled(
        d,
        0.0,
        &format!("a scratch row of {d} features"),
        "use fewer features",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(dense: &[f64], n: usize, d: usize) -> CsrRows {
        let (mut values, mut indices, mut indptr) = (vec![], vec![], vec![0i64]);
        for r in 0..n {
            for c in 0..d {
                let v = dense[r * d + c];
                if v != 0.0 {
                    values.push(v);
                    indices.push(c as i64);
                }
            }
            indptr.push(values.len() as i64);
        }
        CsrRows::from_parts(&values, &indices, &indptr, n, d).unwrap()
    }

    #[test]
    fn dots_match_the_dense_ones() {
        let dense = [1.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, -1.0, 0.5, 0.0, 0.0, 4.0];
        let m = csr(&dense, 3, 4);
        assert_eq!(m.nnz(), 6);
        assert_eq!(m.to_dense().unwrap(), dense.to_vec());
        let mut w = scratch(4).unwrap();
        for i in 0..3 {
            m.scatter(i, &mut w);
            for j in 0..3 {
                let want: f64 = (0..4).map(|c| dense[i * 4 + c] * dense[j * 4 + c]).sum();
                assert_eq!(m.dot_rows(i, &m, j), want);
                assert_eq!(m.gather_dot(j, &w), want);
            }
            m.clear(i, &mut w);
            assert!(w.iter().all(|&v| v == 0.0));
        }
        let g = m.gather(&[2, 0]).unwrap();
        assert_eq!(g.row(0), m.row(2));
        assert_eq!(g.sq_norm(1), m.sq_norm(0));
        assert_eq!(m.max_abs(), 4.0);
    }

    #[test]
    fn the_transpose_accumulates_the_same_dots() {
        let dense = [1.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, -1.0, 0.5, 0.0, 0.0, 4.0];
        let m = csr(&dense, 3, 4);
        let t = Csc::of(&m).unwrap().unwrap();
        let mut acc = vec![0.0; 3];
        for i in 0..3 {
            let (idx, val) = m.row(i);
            t.accumulate(idx, val, &mut acc);
            for (j, &a) in acc.iter().enumerate() {
                assert_eq!(a, m.dot_rows(i, &m, j));
            }
            assert!(t.cost(idx) <= m.nnz());
            t.clear(idx, &mut acc);
            assert!(acc.iter().all(|&v| v == 0.0));
        }
        // Built once, then shared.
        let (a, b) = (
            m.transpose().unwrap().unwrap(),
            m.transpose().unwrap().unwrap(),
        );
        assert!(std::sync::Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn bad_structure_is_refused() {
        let ok = CsrRows::from_parts(&[1.0, 2.0], &[0, 2], &[0, 1, 2], 2, 3);
        assert!(ok.is_ok());
        type Case<'a> = (&'a [f64], &'a [i64], &'a [i64], &'a str);
        let cases: [Case; 7] = [
            (&[1.0, 2.0], &[0, 3], &[0, 1, 2], "outside [0, 3)"),
            (&[1.0, 2.0], &[0, -1], &[0, 1, 2], "outside"),
            (&[1.0, 2.0], &[0, 2], &[0, 2, 1], "non-decreasing"),
            (&[1.0, 2.0], &[0, 2], &[0, 1], "indptr has 2 entries"),
            (&[1.0, 2.0], &[2, 0], &[0, 2, 2], "not sorted"),
            (&[1.0, f64::NAN], &[0, 2], &[0, 1, 2], "NaN"),
            (&[1.0, 2.0], &[0, 2], &[1, 1, 2], "start at 0"),
        ];
        for (v, i, p, want) in cases {
            let err = CsrRows::from_parts(v, i, p, 2, 3).unwrap_err();
            assert!(err.to_string().contains(want), "{err} lacks {want}");
        }
    }
}
