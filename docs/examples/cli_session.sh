#!/usr/bin/env bash
# The command-line session of the user guide's "Model files and the command
# line" page, run in an empty folder: each command is echoed after "$ ", then
# what it printed. docs/results/generate.py saves the whole as
# docs/results/cli-session.txt.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
run() {
    echo "\$ $*"
    "$@" 2>&1
}
run python "$here/write_a9a.py" | sed "s#$here/#docs/examples/#"
run python -m localsvm train a9a
run python -m localsvm predict a9a.t a9a.model a9a.t.predict
run python -m localsvm predict --precision auto a9a.t a9a.model a9a.t.fast
echo '$ cmp a9a.t.predict a9a.t.fast && echo same labels'
cmp a9a.t.predict a9a.t.fast && echo same labels
run head -3 a9a.t.predict
echo '$ python docs/examples/libsvm_check.py a9a.model a9a.t a9a.t.predict'
python "$here/libsvm_check.py" a9a.model a9a.t a9a.t.predict 2>&1
run python -m localsvm train -v 5 a9a.5k
echo '$ python docs/examples/onnx_check.py a9a.model a9a.t'
python "$here/onnx_check.py" a9a.model a9a.t 2>&1
echo '$ python -m localsvm train -t 5 a9a.5k; echo "exit status $?"'
python -m localsvm train -t 5 a9a.5k 2>&1; echo "exit status $?"
