"""One default for computed torque's gains (robodyn.control.COMPUTED_TORQUE_KP, _KD): the
controller class, and a campaign run that names no gains."""

import numpy as np
import pytest

import robodyn
from robodyn import control

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")


def test_the_default_is_critically_damped_at_20_rad_per_s():
    # e'' + kd e' + kp e = 0 with both roots at -20 1/s
    assert np.allclose(np.roots([1.0, control.COMPUTED_TORQUE_KD, control.COMPUTED_TORQUE_KP]),
                       [-20.0, -20.0])
    ctrl = control.ComputedTorque(robodyn.robots.stanford_arm())
    assert np.all(ctrl.kp == control.COMPUTED_TORQUE_KP)
    assert np.all(ctrl.kd == control.COMPUTED_TORQUE_KD)


def test_a_campaign_without_gains_uses_the_default(tmp_path):
    from robodyn.campaign import Campaign

    def metrics(controller, out):
        c = Campaign("stanford_arm", controller=controller,
                     simulation={"duration": 0.3, "control_rate": 1000.0},
                     initial={"q_offset": 0.05}, samples=1, seed=3, trajectories=False)
        (row,) = c.run(tmp_path / out, "serial", progress=False).table.to_pylist()
        assert row["status"] == "ok", row["error"]
        return row["max_tracking_error"], row["tau_peak"], row["energy"]

    default = metrics({"type": "computed-torque"}, "default")
    named = metrics({"type": "computed-torque", "kp": control.COMPUTED_TORQUE_KP,
                     "kd": control.COMPUTED_TORQUE_KD}, "named")
    np.testing.assert_allclose(default, named, rtol=1e-12)
    # and the gains matter here: ten times kp tracks the offset differently
    stiff = metrics({"type": "computed-torque", "kp": 10 * control.COMPUTED_TORQUE_KP,
                     "kd": control.COMPUTED_TORQUE_KD}, "stiff")
    assert abs(stiff[0] - named[0]) > 1e-3 * named[0]
