# Blender's bone heat ("Parent with Automatic Weights") on a character written by
# bench/weights_quality --blender=BLENDER, for the side-by-side table. Run headless:
#
#   blender --background --factory-startup --python-exit-code 1 \
#       --python bench/blender_bone_heat.py -- IN.txt OUT.txt
#
# IN.txt:  "V F J", then V lines "x y z", F lines "a b c" (0-based), J lines
#          "name parent hx hy hz tx ty tz deform" (parent -1 for a root; head/tail in bind space).
# OUT.txt: V lines of J weights (the vertex groups of the deforming bones; 0 elsewhere).
# The mesh is built from the lists (vertex order kept), the armature from the heads and tails.
import sys

import bpy


def read_input(path):
    with open(path) as f:
        nv, nf, nj = (int(x) for x in f.readline().split())
        verts = [tuple(float(x) for x in f.readline().split()) for _ in range(nv)]
        faces = [tuple(int(x) for x in f.readline().split()) for _ in range(nf)]
        joints = []
        for _ in range(nj):
            p = f.readline().split()
            joints.append({
                "name": p[0],
                "parent": int(p[1]),
                "head": tuple(float(x) for x in p[2:5]),
                "tail": tuple(float(x) for x in p[5:8]),
                "deform": p[8] == "1",
            })
    return verts, faces, joints


def main():
    args = sys.argv[sys.argv.index("--") + 1:]
    verts, faces, joints = read_input(args[0])
    bpy.ops.wm.read_factory_settings(use_empty=True)

    mesh = bpy.data.meshes.new("character")
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    mesh_object = bpy.data.objects.new("character", mesh)
    bpy.context.scene.collection.objects.link(mesh_object)

    armature = bpy.data.armatures.new("skeleton")
    armature_object = bpy.data.objects.new("skeleton", armature)
    bpy.context.scene.collection.objects.link(armature_object)
    bpy.context.view_layer.objects.active = armature_object
    armature_object.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    bones = []
    for j in joints:
        b = armature.edit_bones.new(j["name"])
        b.head = j["head"]
        b.tail = j["tail"]
        b.use_deform = j["deform"]
        bones.append(b)
    for b, j in zip(bones, joints):
        if j["parent"] >= 0:
            b.parent = bones[j["parent"]]
    bpy.ops.object.mode_set(mode="OBJECT")

    # Parent with automatic weights: the mesh selected, the armature active.
    bpy.ops.object.select_all(action="DESELECT")
    mesh_object.select_set(True)
    armature_object.select_set(True)
    bpy.context.view_layer.objects.active = armature_object
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")

    column = {j["name"]: i for i, j in enumerate(joints)}
    group_joint = {g.index: column.get(g.name, -1) for g in mesh_object.vertex_groups}
    with open(args[1], "w") as out:
        for v in mesh.vertices:
            row = [0.0] * len(joints)
            for g in v.groups:
                c = group_joint.get(g.group, -1)
                if c >= 0:
                    row[c] = g.weight
            out.write(" ".join("%.9g" % w for w in row) + "\n")


main()
