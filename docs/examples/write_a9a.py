"""Write the bundled a9a set as LIBSVM/svmlight files in the current folder:
``a9a`` (the 32561 training rows), ``a9a.t`` (the 16281 test rows) and
``a9a.5k`` (the first 5000 training rows)."""

from sklearn.datasets import dump_svmlight_file

from localsvm.datasets import load_a9a

d = load_a9a()
dump_svmlight_file(d.X_train, d.y_train, "a9a", zero_based=False)
dump_svmlight_file(d.X_test, d.y_test, "a9a.t", zero_based=False)
dump_svmlight_file(d.X_train[:5000], d.y_train[:5000], "a9a.5k", zero_based=False)
print(f"wrote a9a ({len(d.y_train)} rows), a9a.t ({len(d.y_test)} rows), a9a.5k (5000 rows)")
