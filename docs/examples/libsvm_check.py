"""Predict ``a9a.t`` with LIBSVM itself (``svm_load_model`` and
``svm_predict`` of the libsvm-official package) from the model file that
``localsvm train`` wrote, and compare with localsvm's predictions."""

import sys

import numpy as np
from libsvm.svmutil import svm_load_model, svm_predict, svm_read_problem

model, data, ours = sys.argv[1:4] if len(sys.argv) > 3 else ("a9a.model", "a9a.t", "a9a.t.predict")
y, x = svm_read_problem(data)
labels, _, _ = svm_predict(y, x, svm_load_model(model))  # prints LIBSVM's accuracy line
same = int(np.sum(np.asarray(labels) == np.loadtxt(ours)))
print(f"LIBSVM and localsvm agree on {same} of {len(y)}")
