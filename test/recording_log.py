"""A logger for tests of the ROS-free policy modules: keeps every line with its level."""


class RecordingLog:
    def __init__(self):
        self.lines = []

    def info(self, line):
        self.lines.append(("info", line))

    def warning(self, line):
        self.lines.append(("warning", line))

    def error(self, line):
        self.lines.append(("error", line))
