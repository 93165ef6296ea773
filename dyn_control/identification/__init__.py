"""Offline identification of a robot from recorded data: an exciting motion (excitation), ROS 2 bags
(bag), filtering and differentiation (filtering), the identifiable combinations (base_parameters),
physically consistent parameters (consistent), validation on held-out data (validation) and the
parameter file the nodes load (parameters_file). No ROS beyond reading and writing bags through
`rosbags`; cvxpy, Clarabel and rosbags are the optional extra `identification`.
"""
