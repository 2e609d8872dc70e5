"""Nie (1988), Chapter III: the recursive Kane algorithm, transcribed literally in pure Python.

Source: T. Nie, *Dynamics of mechanical manipulators by Kane's method* (PhD thesis, Oregon
State University, 1988), section III.2 (eqs. 3.1-3.62) and the FORTRAN subroutine AUTOSUB of
programs AUTOTF (App. 4) and AUTOQ (App. 5); seed text nie-1988-kane-manipulators.txt
(Ch. III near its lines 1200-1760, listings near 3100-3700), restated in spec/kane-nie.md.
This is the operation-count baseline of ``robodyn opcount`` and a test oracle, not a fast
path: the O(n^3) form as published, with scalar loops over components j = 1..3 in the order of the listing, so
that running it with an instrumented scalar (robodyn.published.opfloat.OpFloat) counts the
arithmetic of the published algorithm. Comments give the equation or listing loop label of
each block. Misprints corrected per kane-nie.md: Y^k (printed Y^{k-1}) in (3.53), u_k
(printed u_k^k) in (3.7), s^k in frame k-1 (3.16), w^k x D^k (printed w^k x v^k) in (3.20).

Thesis notation (components of a vector in frame k are its dot products with n_j^k):

    A^k_ij   = n_i^{k-1} . n_j^k, direction cosines; joint k acts about/along n_3^{k-1}
    d^k, L^k = origin k -> mass centre of link k, origin k -> origin k+1, in frame k (3.1, 3.2)
    u_k      = qd_k (3.3)
    w^k_{jr}, v^k_{jr} = partial angular velocity of link k / partial velocity of its mass
               centre w.r.t. u_r, frame k (3.12, 3.26, 3.28)
    s^k_{jr} = partial velocity of origin k, components in frame k-1 (3.16, 3.27, 3.29)
    P^k_{jr} = sum_i (sd^k_ir A^k_ij + s^k_ir Ad^k_ij) (3.30) ("MI" in the prismatic branch)
    B, D, E, H (3.36, 3.37, 3.43, 3.45), Z_r (3.57), F_rm (3.59), Y^k (3.52), K'_r (3.60)
    inverse dynamics f = F ud + Z - K' (3.62); forward dynamics F ud = f + K' - Z (3.56, 3.58)

Index convention here: links and speeds k, r, m run 1..N as in the thesis (index 0 unused);
components j, i run 0..2 for the thesis' 1..3.

Where this transcription deviates from the printed text, and why:

1. Structural data come from a ModelSpec (`chain_from_spec`): body frames are re-expressed so
   that every joint axis is the third unit vector n_3^{k-1} of the preceding thesis frame. Then
   A^k = Rz(q_k) C^k for a revolute joint and A^k = C^k for a prismatic one, C^k constant. The
   listing "simply writes the elements into the program" (L1739); `_direction_cosines` does
   the same generically: products with structural constants 0 and +-1 (after rounding entries
   within 1e-14 of them) are not formed, every other one is. sin and cos of q_k are evaluated
   once per joint (the listing calls DSIN/DCOS four times each per joint).
2. Gravity. The thesis needs a base unit vector n_L^0 along gravity (3.51). Frame 0's n_3^0 is
   fixed by joint 1's axis, so when the ModelSpec gravity lies along one of n_1^0, n_2^0,
   n_3^0 that axis is L and g is the signed component (Stanford: L = 3, g = -9.81); otherwise
   (a general chain) Y^1_j = sum_i gamma_i A^1_ij with gamma the unit gravity direction in
   frame 0, which reduces to (3.52) when gamma = n_L^0.
3. Inertia. The thesis assumes n^k along the central principal axes (L1521) and uses (3.45)
   and sum_j I_j w_jm w_jr in F. A link whose inertia is not diagonal in its thesis frame
   (off-diagonal entries above 1e-12 of the largest moment) uses the full dyadic, as the
   thesis says is "nothing more than" plugging it into (3.40):
       H^k = I^k E^k + W^k x (I^k W^k),   F_rm += sum_j (I^k w^k_{.m})_j w^k_{jr}.
   Diagonal links use (3.45) and the listing's F term exactly.
4. Prismatic branch (listing loop 165, eqs. 3.24-3.25, 3.28-3.29, 3.33-3.34), derived anew:
     - PS(K+1,1,R) uses DL(K,2) in the listing; the vector is L^k, so LL(K,2) is used;
     - PS(K+1,3,R) uses MI(K,2,R) in the listing; the third component needs MI(K,3,R);
     - the listing assumes n_3^{k-1} = n_3^k (A^k_3. = (0, 0, 1)): "(DL(K,3)+Q(K))" and
       "PV(K,3,K)=1.0". Here d^k_j + A^k_3j q_k, L^k_j + A^k_3j q_k, u_k A^k_3j and
       v^k_{jk} = s^{k+1}_{jk} = A^k_3j are used for every j, as in (3.24)/(3.28);
     - the same holds for a prismatic first link (listing: PV(1,3,1)=PS(2,3,1)=1.0);
     - (3.33)/(3.34) as OCR'd print "- w^k_{2r}(Ad q + A u)" for the first w-term; but d/dt of
       w^k_{2r}(d^k_3 + A^k_33 q_k) gives "+", as the listing has ("+U(K)*PW(K,2,R)");
     - the Ad^k_3j q_k terms of (3.33)/(3.34) are dropped: row 3 of A^k is constant for every
       joint type (the joint acts along n_3^{k-1}), so they vanish identically; the listing
       omits them too. "q_2^k" in (3.33)/(3.34) is q_k and the last line of (3.34) is
       sd^{k+1}_{jk} (= 0), per kane-nie.md.
5. Kept as in the listing although wasteful: the sums over links in Z, F and K' run over all
   k = 1..N (terms with k < r are zero), W sums up to r = k even for a prismatic link (a zero
   term), s^k_j (loop 200) is computed although nothing uses it, PV/PS of a revolute link are
   accumulated onto their zero initial values, and the K = 1 special case forms no
   PVD(1,.,1) or PSD(2,.,1) (they are exactly 0: s^1 = 0 and PWD(1,.,1) = row 3 of Ad^1 = 0).
6. Joint terms absent from the thesis, added to match robodyn: f_r += armature_r ud_r +
   damping_r u_r + friction_r sign(u_r), each formed only when that coefficient is non-zero.
7. Forward dynamics: AUTOQ solves the 2N first-order equations implicitly (BDF2 residual,
   Broyden updates). Here the linear system F ud = K - Z of step (7) is solved directly by
   an LDL^T factorisation (F + diag(armature) is symmetric positive definite).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

__all__ = ["KaneChain", "chain_from_spec", "kane_terms", "inverse_dynamics",
           "forward_dynamics", "mass_matrix"]

_SNAP = 1e-14       # structural constants this close to 0 or +-1 are taken as exact
_PRINCIPAL = 1e-12  # relative size of products of inertia below which they are dropped


@dataclass
class KaneChain:
    """Structural data of a serial chain in the thesis' frames (all lists, plain floats).

    k = 1..N is stored at list index k - 1. Frame k is fixed in link k, n_3^k is the axis of
    joint k+1; origin k lies on the axis of joint k (revolute: fixed in links k-1 and k;
    prismatic: fixed in link k-1, where link k's body origin sits at q_k = 0).
    """

    n: int
    revolute: list        # DELTA(K,1): True revolute, False prismatic
    C: list               # (3, 3) constant factor: A^k = Rz(q_k) C^k (revolute) or C^k
    DL: list              # d^k_j: origin k -> mass centre, frame k (prismatic: at q_k = 0)
    LL: list              # L^k_j: origin k -> origin k+1, frame k (prismatic: at q_k = 0)
    IN: list              # (3, 3) central inertia in frame k
    principal: list       # True if IN is diagonal (thesis' assumption, eq. 3.45)
    MS: list              # m_k
    L: int | None         # gravity axis n_L^0 (0, 1, 2), or None for a general direction
    G: float              # signed g along n_L^0 (or |gravity| when L is None)
    gamma: list           # unit gravity direction in frame 0 (used when L is None)
    armature: list
    damping: list
    friction: list
    R0: np.ndarray        # orientation of thesis frame 0 in the ModelSpec base frame
    Rc: list              # orientation of thesis frame k in ModelSpec body frame k


# ---------------------------------------------------------------- structural data

def _snap(M):
    M = np.array(M, dtype=float)
    for idx, x in np.ndenumerate(M):
        for c in (0.0, 1.0, -1.0):
            if abs(x - c) < _SNAP:
                M[idx] = c
    return M


def _frame_for_axis(a):
    """A rotation whose third column is the unit vector a (a permutation if a = +-e_i)."""
    a = _snap(a / np.linalg.norm(a))
    e = np.eye(3)
    for i in range(3):
        if abs(abs(a[i]) - 1.0) == 0.0:
            if a[i] > 0:  # cyclic permutation (e_{i+1}, e_{i+2}, e_i)
                return np.column_stack([e[(i + 1) % 3], e[(i + 2) % 3], e[i]])
            return np.column_stack([e[(i + 2) % 3], e[(i + 1) % 3], -e[i]])
    h = e[int(np.argmin(np.abs(a)))]
    x = h - (h @ a) * a
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(a, x), a])


def chain_from_spec(spec) -> KaneChain:
    """Thesis structural data (A^k factors, d^k, L^k, I^k, m_k, gravity) of a serial ModelSpec.

    Thesis frame k = ModelSpec body frame k rotated by Rc[k] (constant): Rc[k] carries the
    next joint's axis into n_3^k (Rc[k] = origin_{k+1}.R Q_{k+1}, Q a rotation taking e_3 to
    that joint's axis); the last link uses Rc[N] = Q_N. Frame 0 is the base rotated by
    R0 = origin_1.R Q_1. Then A^k = Rc[k-1]^T origin_k.R Rot(axis_k, q_k) Rc[k]
    = Rz(q_k) C^k with C^k = Rc[k-1]^T origin_k.R Rc[k].
    """
    bodies = list(spec.bodies)
    n = len(bodies)
    if n == 0:
        raise ValueError("chain_from_spec: the model has no bodies")
    for i, b in enumerate(bodies):
        if int(b.parent) != i - 1:
            raise ValueError(f"chain_from_spec: body {i} has parent {b.parent}; "
                             "the thesis algorithm needs a serial chain (parent = i - 1)")
        if b.joint_type not in ("revolute", "prismatic"):
            raise ValueError(f"chain_from_spec: unknown joint type {b.joint_type!r}")
    Ro = [_snap(np.asarray(b.origin, dtype=float)[:3, :3]) for b in bodies]
    po = [np.asarray(b.origin, dtype=float)[:3, 3] for b in bodies]
    Q = [_frame_for_axis(np.asarray(b.axis, dtype=float)) for b in bodies]
    # Rc[k] for k = 0..N: thesis frame k in body frame k (k = 0: the base)
    Rc = [_snap(Ro[k] @ Q[k]) for k in range(n)] + [Q[n - 1]]
    C, DL, LL, IN, principal = [], [], [], [], []
    for k in range(1, n + 1):
        b = bodies[k - 1]
        C.append(_snap(Rc[k - 1].T @ Ro[k - 1] @ Rc[k]).tolist())
        R = Rc[k]
        DL.append((R.T @ np.asarray(b.com, dtype=float)).tolist())
        LL.append((R.T @ po[k]).tolist() if k < n else [0.0, 0.0, 0.0])
        I = R.T @ np.asarray(b.inertia, dtype=float) @ R
        I = 0.5 * (I + I.T)
        off = max(abs(I[0, 1]), abs(I[0, 2]), abs(I[1, 2]))
        diag = off <= _PRINCIPAL * max(np.max(np.abs(np.diag(I))), 1e-300)
        if diag:
            I = np.diag(np.diag(I))
        IN.append(I.tolist())
        principal.append(bool(diag))
    g0 = Rc[0].T @ np.asarray(spec.gravity, dtype=float)
    gnorm = float(np.linalg.norm(g0))
    L, G, gamma = None, gnorm, [0.0, 0.0, 0.0]
    if gnorm == 0.0:
        L, G = 2, 0.0
    else:
        gamma = (g0 / gnorm).tolist()
        for axis in range(3):
            others = [abs(g0[j]) for j in range(3) if j != axis]
            if max(others) <= _SNAP * gnorm:
                L, G = axis, float(g0[axis])
    return KaneChain(
        n=n,
        revolute=[b.joint_type == "revolute" for b in bodies],
        C=C, DL=DL, LL=LL, IN=IN, principal=principal,
        MS=[float(b.mass) for b in bodies],
        L=L, G=G, gamma=gamma,
        armature=[float(b.armature) for b in bodies],
        damping=[float(b.damping) for b in bodies],
        friction=[float(b.friction) for b in bodies],
        R0=Rc[0], Rc=Rc[1:],
    )


def _as_chain(chain):
    return chain if isinstance(chain, KaneChain) else chain_from_spec(chain)


# ---------------------------------------------------------------- direction cosines

def _times(x, const):
    """x * const for a structural constant, as hand-written code would: None if const is 0."""
    if const == 0.0:
        return None
    if const == 1.0:
        return x
    if const == -1.0:
        return -x
    return x * const


def _plus(a, b, zero):
    if a is None:
        return zero if b is None else b
    return a if b is None else a + b


def _direction_cosines(ch, k, q, u, scalar):
    """A^k and Ad^k (3x3 lists) and a mask of the structurally non-zero entries of A^k.

    Revolute: A^k = Rz(q) C^k, i.e. rows c C_1 - s C_2, s C_1 + c C_2, C_3; Ad^k = u dA/dq,
    rows -u A_2, u A_1, 0 (listing: AD(1,1,1)=-DSIN(Q(1))*U(1), ...). Prismatic: A^k = C^k,
    Ad^k = 0.
    """
    zero = scalar(0.0)
    Ck = ch.C[k - 1]
    A = [[zero] * 3 for _ in range(3)]
    AD = [[zero] * 3 for _ in range(3)]
    nz = [[Ck[i][j] != 0.0 for j in range(3)] for i in range(3)]
    if not ch.revolute[k - 1]:
        for i in range(3):
            for j in range(3):
                A[i][j] = scalar(Ck[i][j])
        return A, AD, nz
    sin = getattr(scalar, "sin", math.sin)
    cos = getattr(scalar, "cos", math.cos)
    c, s = cos(q), sin(q)
    for j in range(3):
        c1, c2 = Ck[0][j], Ck[1][j]
        nz[0][j] = nz[1][j] = (c1 != 0.0 or c2 != 0.0)
        ms = _times(s, c2)
        A[0][j] = _plus(_times(c, c1), None if ms is None else -ms, zero)
        A[1][j] = _plus(_times(s, c1), _times(c, c2), zero)
        A[2][j] = scalar(Ck[2][j])
        if nz[0][j]:
            AD[0][j] = -(A[1][j] * u)
            AD[1][j] = A[0][j] * u
    return A, AD, nz


# ---------------------------------------------------------------- AUTOSUB

def _autosub(ch, q, u, scalar):
    """Steps (1)-(6) of III.3: W, V, partial (angular) velocities, B, D, E, H, Z, F, Y, K'.

    Returns (F, Z, KP2) with F as an (N+1)x(N+1) list and Z, KP2 as N+1 lists (index 0 unused).
    """
    N = ch.n
    zero = scalar(0.0)
    Q = [zero] + [scalar(x) for x in q]
    U = [zero] + [scalar(x) for x in u]
    MS = [zero] + [scalar(x) for x in ch.MS]
    DL = [None] + [[scalar(x) for x in row] for row in ch.DL]
    LL = [None] + [[scalar(x) for x in row] for row in ch.LL]
    IN = [None] + [[[scalar(x) for x in row] for row in I] for I in ch.IN]
    G = scalar(ch.G)
    REV = [None] + list(ch.revolute)

    def arr(n1):  # X[k][j][r], k < n1, j < 3, r <= N, zero-initialised (loop 115)
        return [[[zero] * (N + 1) for _ in range(3)] for _ in range(n1)]

    PW, PWD, PV, PVD = arr(N + 1), arr(N + 1), arr(N + 1), arr(N + 1)
    PS, PSD = arr(N + 2), arr(N + 2)
    P, PD, MI, MID = arr(N + 1), arr(N + 1), arr(N + 1), arr(N + 1)
    W = [[zero] * 3 for _ in range(N + 1)]
    V = [[zero] * 3 for _ in range(N + 1)]
    S = [[zero] * 3 for _ in range(N + 2)]
    B = [[zero] * 3 for _ in range(N + 1)]
    D = [[zero] * 3 for _ in range(N + 1)]
    E = [[zero] * 3 for _ in range(N + 1)]
    H = [[zero] * 3 for _ in range(N + 1)]
    Y = [[zero] * 3 for _ in range(N + 1)]
    Z = [zero] * (N + 1)
    KP2 = [zero] * (N + 1)
    F = [[zero] * (N + 1) for _ in range(N + 1)]

    # transformation matrices and their derivatives (structural data)
    A, AD = [None] * (N + 1), [None] * (N + 1)
    for k in range(1, N + 1):
        A[k], AD[k], _ = _direction_cosines(ch, k, Q[k], U[k], scalar)

    # partial angular velocities and their derivatives, (3.12)-(3.13), loops 120-150
    if REV[1]:
        for j in range(3):
            PW[1][j][1] = A[1][2][j]
            PWD[1][j][1] = AD[1][2][j]
    for k in range(2, N + 1):
        for j in range(3):
            for r in range(1, k):
                for i in range(3):
                    PW[k][j][r] = PW[k][j][r] + PW[k - 1][i][r] * A[k][i][j]
                    PWD[k][j][r] = (PWD[k][j][r] + PWD[k - 1][i][r] * A[k][i][j]
                                    + PW[k - 1][i][r] * AD[k][i][j])
            if REV[k]:
                PW[k][j][k] = A[k][2][j]
                PWD[k][j][k] = AD[k][2][j]
            else:
                PW[k][j][k] = zero
                PWD[k][j][k] = zero

    # angular velocities W^k_j = sum_r w^k_jr u_r, loop 160
    for k in range(1, N + 1):
        for j in range(3):
            for r in range(1, k + 1):
                W[k][j] = W[k][j] + PW[k][j][r] * U[r]

    # partial velocities of mass centres and origins and their derivatives, loops 163-180
    # (3.26)-(3.34); link 1: s^1 = 0, and PVD(1,.,1) = PSD(2,.,1) = 0 since row 3 of Ad^1 is 0
    if REV[1]:
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            PV[1][j][1] = PW[1][j1][1] * DL[1][j2] - PW[1][j2][1] * DL[1][j1]
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            PS[2][j][1] = PW[1][j1][1] * LL[1][j2] - PW[1][j2][1] * LL[1][j1]
    else:
        # listing: PV(1,3,1)=PS(2,3,1)=1.0, which assumes A^1_3. = (0, 0, 1)
        for j in range(3):
            PV[1][j][1] = A[1][2][j]
            PS[2][j][1] = A[1][2][j]
    for k in range(2, N + 1):
        if not REV[k]:
            # translational link k, (3.28), (3.29), (3.30), (3.33), (3.34); corrected, see
            # module docstring item 4
            A3 = A[k][2]
            for r in range(1, k):
                for j in range(3):
                    for i in range(3):
                        MI[k][j][r] = MI[k][j][r] + PS[k][i][r] * A[k][i][j]
                        MID[k][j][r] = (MID[k][j][r] + PSD[k][i][r] * A[k][i][j]
                                        + PS[k][i][r] * AD[k][i][j])
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    PV[k][j][r] = (MI[k][j][r]
                                   + (DL[k][j2] + A3[j2] * Q[k]) * PW[k][j1][r]
                                   - (DL[k][j1] + A3[j1] * Q[k]) * PW[k][j2][r])
                    PS[k + 1][j][r] = (MI[k][j][r]
                                       + (LL[k][j2] + A3[j2] * Q[k]) * PW[k][j1][r]
                                       - (LL[k][j1] + A3[j1] * Q[k]) * PW[k][j2][r])
                    PVD[k][j][r] = (MID[k][j][r]
                                    + (DL[k][j2] + A3[j2] * Q[k]) * PWD[k][j1][r]
                                    + A3[j2] * U[k] * PW[k][j1][r]
                                    - (DL[k][j1] + A3[j1] * Q[k]) * PWD[k][j2][r]
                                    - A3[j1] * U[k] * PW[k][j2][r])
                    PSD[k + 1][j][r] = (MID[k][j][r]
                                        + (LL[k][j2] + A3[j2] * Q[k]) * PWD[k][j1][r]
                                        + A3[j2] * U[k] * PW[k][j1][r]
                                        - (LL[k][j1] + A3[j1] * Q[k]) * PWD[k][j2][r]
                                        - A3[j1] * U[k] * PW[k][j2][r])
            for j in range(3):
                PV[k][j][k] = A3[j]
                PS[k + 1][j][k] = A3[j]
        else:
            # rotational link k, (3.26), (3.27), (3.30), (3.31), (3.32), loops 170-175
            for r in range(1, k + 1):
                for j in range(3):
                    for i in range(3):
                        P[k][j][r] = P[k][j][r] + PS[k][i][r] * A[k][i][j]
                        PD[k][j][r] = (PD[k][j][r] + PSD[k][i][r] * A[k][i][j]
                                       + PS[k][i][r] * AD[k][i][j])
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    PV[k][j][r] = (PV[k][j][r] + P[k][j][r] + PW[k][j1][r] * DL[k][j2]
                                   - PW[k][j2][r] * DL[k][j1])
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    PS[k + 1][j][r] = (PS[k + 1][j][r] + P[k][j][r]
                                       + PW[k][j1][r] * LL[k][j2] - PW[k][j2][r] * LL[k][j1])
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    PVD[k][j][r] = (PVD[k][j][r] + PD[k][j][r] + PWD[k][j1][r] * DL[k][j2]
                                    - PWD[k][j2][r] * DL[k][j1])
                for j in range(3):
                    j1, j2 = (j + 1) % 3, (j + 2) % 3
                    PSD[k + 1][j][r] = (PSD[k + 1][j][r] + PD[k][j][r]
                                        + PWD[k][j1][r] * LL[k][j2]
                                        - PWD[k][j2][r] * LL[k][j1])

    # velocities of mass centres V^k_j and of origins S^k_j, loop 200 (S is never used later)
    for k in range(1, N + 1):
        for j in range(3):
            for r in range(1, k + 1):
                V[k][j] = V[k][j] + PV[k][j][r] * U[r]
                S[k][j] = S[k][j] + PS[k][j][r] * U[r]

    # intermediate variables B (3.36), D (3.37), E (3.43), H (3.45), loops 210-230
    for k in range(1, N + 1):
        B[k][0] = W[k][1] * V[k][2] - W[k][2] * V[k][1]
        B[k][1] = W[k][2] * V[k][0] - W[k][0] * V[k][2]
        B[k][2] = W[k][0] * V[k][1] - W[k][1] * V[k][0]
        for j in range(3):
            for r in range(1, k + 1):
                D[k][j] = D[k][j] + PVD[k][j][r] * U[r]
                E[k][j] = E[k][j] + PWD[k][j][r] * U[r]
        I = IN[k]
        if ch.principal[k - 1]:
            H[k][0] = I[0][0] * E[k][0] + W[k][1] * W[k][2] * (I[2][2] - I[1][1])
            H[k][1] = I[1][1] * E[k][1] + W[k][2] * W[k][0] * (I[0][0] - I[2][2])
            H[k][2] = I[2][2] * E[k][2] + W[k][0] * W[k][1] * (I[1][1] - I[0][0])
        else:
            # generalisation to a full central inertia: H = I E + W x (I W)
            IW = [I[j][0] * W[k][0] + I[j][1] * W[k][1] + I[j][2] * W[k][2] for j in range(3)]
            for j in range(3):
                j1, j2 = (j + 1) % 3, (j + 2) % 3
                H[k][j] = (I[j][0] * E[k][0] + I[j][1] * E[k][1] + I[j][2] * E[k][2]
                           + W[k][j1] * IW[j2] - W[k][j2] * IW[j1])
    for k in range(1, N + 1):
        for j in range(3):
            D[k][j] = D[k][j] + B[k][j]

    # Z_r (3.57), loop 240
    for r in range(1, N + 1):
        for k in range(1, N + 1):
            for j in range(3):
                Z[r] = Z[r] + PW[k][j][r] * H[k][j] + MS[k] * PV[k][j][r] * D[k][j]

    # inertia coefficients F_rm (3.59), lower triangle then copied, loops 245-250
    for r in range(1, N + 1):
        for m in range(1, r + 1):
            for j in range(3):
                for k in range(1, N + 1):
                    if ch.principal[k - 1]:
                        F[r][m] = (F[r][m] + IN[k][j][j] * PW[k][j][m] * PW[k][j][r]
                                   + MS[k] * PV[k][j][m] * PV[k][j][r])
                    else:
                        I = IN[k]
                        F[r][m] = (F[r][m] + (I[j][0] * PW[k][0][m] + I[j][1] * PW[k][1][m]
                                              + I[j][2] * PW[k][2][m]) * PW[k][j][r]
                                   + MS[k] * PV[k][j][m] * PV[k][j][r])
                    F[m][r] = F[r][m]

    # gravity direction in frame k, Y^k_j (3.52), loops 270-280
    for j in range(3):
        if ch.L is not None:
            Y[1][j] = A[1][ch.L][j]
        else:
            Y[1][j] = (scalar(ch.gamma[0]) * A[1][0][j] + scalar(ch.gamma[1]) * A[1][1][j]
                       + scalar(ch.gamma[2]) * A[1][2][j])
    for k in range(2, N + 1):
        for j in range(3):
            for i in range(3):
                Y[k][j] = Y[k][j] + Y[k - 1][i] * A[k][i][j]

    # generalized active forces of gravity K'_r (3.60), loop 290
    for r in range(1, N + 1):
        for k in range(1, N + 1):
            for j in range(3):
                KP2[r] = KP2[r] + MS[k] * G * Y[k][j] * PV[k][j][r]

    return F, Z, KP2


def _sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def _check(chain, name, x):
    x = list(x)
    if len(x) != chain.n:
        raise ValueError(f"{name}: expected {chain.n} values, got {len(x)}")
    return x


# ---------------------------------------------------------------- public functions

def kane_terms(chain, q, qd, scalar=float):
    """(F, Z, K'): inertia matrix (3.59), velocity terms Z (3.57), gravity forces K' (3.60).

    Thesis equations only (no armature or joint friction). F is an n x n numpy array, Z and
    K' are (n,) arrays; tau = F qdd + Z - K' for the rigid chain.
    """
    ch = _as_chain(chain)
    F, Z, KP2 = _autosub(ch, _check(ch, "q", q), _check(ch, "qd", qd), scalar)
    N = ch.n
    return (np.array([[float(F[r][m]) for m in range(1, N + 1)] for r in range(1, N + 1)]),
            np.array([float(Z[r]) for r in range(1, N + 1)]),
            np.array([float(KP2[r]) for r in range(1, N + 1)]))


def mass_matrix(chain, q, scalar=float):
    """F + diag(armature): the joint-space inertia matrix (F does not depend on qd)."""
    ch = _as_chain(chain)
    F, _, _ = kane_terms(ch, q, [0.0] * ch.n, scalar)
    return F + np.diag(ch.armature)


def inverse_dynamics(chain, q, qd, qdd, scalar=float):
    """Driving forces f_r, steps (1)-(8) of III.3 (AUTOTF's AUTOSUB), plus joint terms.

    f = F ud + Z - K'  (3.62)  + armature ud + damping u + friction sign(u).
    `chain` is a KaneChain or a serial ModelSpec; `scalar` is the number type every
    arithmetic operation goes through (float, or opfloat.OpFloat to count them).
    Returns an (n,) float array.
    """
    ch = _as_chain(chain)
    q, qd, qdd = _check(ch, "q", q), _check(ch, "qd", qd), _check(ch, "qdd", qdd)
    N = ch.n
    F, Z, KP2 = _autosub(ch, q, qd, scalar)
    UD = [None] + [scalar(x) for x in qdd]
    U = [None] + [scalar(x) for x in qd]
    zero = scalar(0.0)
    # generalized inertia forces K*_r (3.47), loops 255-260
    KSTAR = [zero] * (N + 1)
    for r in range(1, N + 1):
        for m in range(1, N + 1):
            KSTAR[r] = KSTAR[r] - F[r][m] * UD[m]
        KSTAR[r] = KSTAR[r] - Z[r]
    # active forces f_r = -K*_r - K'_r (3.62), loop 300, then the joint terms
    TQ = [None] * (N + 1)
    for r in range(1, N + 1):
        TQ[r] = -KSTAR[r] - KP2[r]
        if ch.armature[r - 1] != 0.0:
            TQ[r] = TQ[r] + scalar(ch.armature[r - 1]) * UD[r]
        if ch.damping[r - 1] != 0.0:
            TQ[r] = TQ[r] + scalar(ch.damping[r - 1]) * U[r]
        if ch.friction[r - 1] != 0.0 and _sign(U[r]) != 0.0:
            TQ[r] = TQ[r] + scalar(ch.friction[r - 1]) * _sign(U[r])
    return np.array([float(TQ[r]) for r in range(1, N + 1)])


def forward_dynamics(chain, q, qd, tau, scalar=float):
    """ud solving sum_m F_rm ud_m = K_r - Z_r (3.56), K_r = f_r + K'_r (3.61), step (7).

    With the joint terms: (F + diag(armature)) ud = f + K' - Z - damping u - friction sign(u).
    Solved by LDL^T (AUTOQ instead iterates on the implicit BDF2 residual). Returns (n,).
    """
    ch = _as_chain(chain)
    q, qd, tau = _check(ch, "q", q), _check(ch, "qd", qd), _check(ch, "tau", tau)
    N = ch.n
    F, Z, KP2 = _autosub(ch, q, qd, scalar)
    U = [None] + [scalar(x) for x in qd]
    M = [[None] * N for _ in range(N)]
    b = [None] * N
    for r in range(1, N + 1):
        for m in range(1, N + 1):
            M[r - 1][m - 1] = F[r][m]
        if ch.armature[r - 1] != 0.0:
            M[r - 1][r - 1] = M[r - 1][r - 1] + scalar(ch.armature[r - 1])
        rhs = scalar(tau[r - 1]) + KP2[r] - Z[r]
        if ch.damping[r - 1] != 0.0:
            rhs = rhs - scalar(ch.damping[r - 1]) * U[r]
        if ch.friction[r - 1] != 0.0 and _sign(U[r]) != 0.0:
            rhs = rhs - scalar(ch.friction[r - 1]) * _sign(U[r])
        b[r - 1] = rhs
    # LDL^T of the symmetric matrix M (lower triangle), then the two triangular solves
    Lf = [[None] * N for _ in range(N)]
    Dd = [None] * N
    for i in range(N):
        for j in range(i + 1):
            x = M[i][j]
            for p in range(j):
                x = x - Lf[i][p] * Lf[j][p] * Dd[p]
            if i == j:
                Dd[i] = x
                Lf[i][i] = None
            else:
                Lf[i][j] = x / Dd[j]
    y = [None] * N
    for i in range(N):
        x = b[i]
        for p in range(i):
            x = x - Lf[i][p] * y[p]
        y[i] = x
    ud = [None] * N
    for i in reversed(range(N)):
        x = y[i] / Dd[i]
        for p in range(i + 1, N):
            x = x - Lf[p][i] * ud[p]
        ud[i] = x
    return np.array([float(x) for x in ud])
