"""Offline identification of a robot from recorded data: an exciting motion (excitation), ROS 2 bags
(bag), filtering and differentiation (filtering), the identifiable combinations (base_parameters),
physically consistent parameters (consistent), validation on held-out data (validation), the
parameter file the nodes load (parameters_file), the whole path (identify), recordings of a
simulated robot (synthetic) and the `dyn-control excite | identify` commands (cli). No ROS beyond
reading and writing bags through `rosbags` (the live recorder is nodes/bag_recorder.py); cvxpy,
Clarabel and rosbags are the optional extra `identification`.
"""
