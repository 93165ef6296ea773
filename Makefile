# Set-up and the everyday commands. Every target installs what it needs into .venv first,
# so `make demo` and `make test` work on a fresh machine with only Python 3.11.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# DDS discovery never leaves this machine, for every command below.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp

RUN_STAMP  := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
CONTROL_MSGS_STAMP := $(VENV)/.installed-control-msgs
CONTROL_MSGS_BUILD := build/control_msgs
CMAKE ?= cmake
# the kernels compiled into the package's kernel cache (dyn_control/__kernel_cache__, which every
# entry point finds: dyn_control/kernel_cache.py), as setup.py's install step does for an installed
# copy, so that the nodes of the demo and of the suite start in seconds. After an edit only what the
# edit touched compiles again (entries are keyed on the content of everything they were built from).
KERNEL_CACHE  := $(shell $(PYTHON) -c "import os; print(os.environ.get('NUMBA_CACHE_DIR') or 'dyn_control/__kernel_cache__')")
KERNELS_STAMP := $(KERNEL_CACHE)/.compiled
SOURCES := $(shell find dyn_control -name '*.py')

.PHONY: demo test test-nojit bench install control-msgs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(RUN_STAMP): $(PY) setup.py requirements/ros.txt
	$(PIP) install -r requirements/ros.txt matplotlib
	$(PIP) install -e .
	touch $@

# control_msgs (FollowJointTrajectory for the controller's ~/follow_joint_trajectory action) is not
# on PyPI: build interfaces/control_msgs with the rosidl wheels and install it into .venv (~20 s of
# CPU; cmake and a C/C++ compiler needed), from the wheels in .venv only (a sourced ROS 2 install's
# paths are left out). The wheels' exported CMake targets name the wheel builder's Python include
# directories; the package's CMakeLists.txt points them at this Python's.
$(CONTROL_MSGS_STAMP): $(RUN_STAMP) requirements/rosidl.txt $(shell find interfaces/control_msgs -type f)
	@command -v $(CMAKE) >/dev/null || { echo "control_msgs: needs cmake and a C/C++ compiler (e.g. apt install cmake g++)"; exit 1; }
	$(PIP) install -r requirements/rosidl.txt
	rm -rf $(CONTROL_MSGS_BUILD)
	PATH="$(abspath $(VENV))/bin:$$PATH" AMENT_PREFIX_PATH="$(abspath $(VENV))" CMAKE_PREFIX_PATH="$(abspath $(VENV))" \
	    $(CMAKE) -S interfaces/control_msgs -B $(CONTROL_MSGS_BUILD) \
	    -DCMAKE_PREFIX_PATH="$(abspath $(VENV))" -DCMAKE_INSTALL_PREFIX="$(abspath $(VENV))" \
	    -DPython3_EXECUTABLE="$(abspath $(PY))" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release
	PATH="$(abspath $(VENV))/bin:$$PATH" $(CMAKE) --build $(CONTROL_MSGS_BUILD) -j 2
	$(CMAKE) --install $(CONTROL_MSGS_BUILD)
	$(PY) -c "from control_msgs.action import FollowJointTrajectory"
	touch $@

control-msgs: $(CONTROL_MSGS_STAMP)

$(TEST_STAMP): $(RUN_STAMP) $(CONTROL_MSGS_STAMP) requirements/test.txt
	$(PIP) install -r requirements/test.txt
	touch $@

$(KERNELS_STAMP): $(RUN_STAMP) $(SOURCES)
	$(VENV)/bin/dyn-control compile
	touch $@

install: $(RUN_STAMP) $(CONTROL_MSGS_STAMP) $(KERNELS_STAMP)

# bytecode of the package, as an install writes it: every node process would otherwise compile our
# sources at start (0.2 s each where PYTHONDONTWRITEBYTECODE is set); stale files are recompiled
BYTECODE := $(PY) -m compileall -q dyn_control

# the demo's two nodes need their own loops' kernels only (the rest compiles for make test / bench);
# with them cached this loads them in about a second
demo: $(RUN_STAMP)
	$(BYTECODE)
	$(VENV)/bin/dyn-control compile controller simulator
	$(VENV)/bin/dyn-control demo

test: $(TEST_STAMP) $(KERNELS_STAMP)
	$(PY) -m pytest -q -rs test
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q -rs -m kernels test

bench: $(TEST_STAMP) $(KERNELS_STAMP)
	$(BYTECODE)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) dyn_control/__kernel_cache__ demo_output build install log
