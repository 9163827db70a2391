"""Export the LIBSVM model file that ``localsvm train`` wrote to ONNX
(``localsvm.onnx.to_onnx``), run it in onnxruntime on ``a9a.t`` and compare
its labels with localsvm's."""

import sys

import numpy as np
import onnxruntime as ort
from sklearn.datasets import load_svmlight_file

from localsvm import load_libsvm_model
from localsvm.onnx import to_onnx

model_file, data = sys.argv[1:3] if len(sys.argv) > 2 else ("a9a.model", "a9a.t")
model = load_libsvm_model(model_file)
X, _ = load_svmlight_file(data, n_features=model.n_features_in_)
X = np.asarray(X.todense(), dtype=np.float32)
session = ort.InferenceSession(to_onnx(model).SerializeToString())
labels = session.run(["label"], {session.get_inputs()[0].name: X})[0]
same = int(np.sum(labels == model.predict(X)))
print(f"onnxruntime and localsvm agree on {same} of {len(X)}")
