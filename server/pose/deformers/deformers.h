// The deformers, one file each in this folder; DeformerRegistry::Default (deformer.cc) holds one
// per v1::Deformer value.
#ifndef SKINNING_SERVER_POSE_DEFORMERS_DEFORMERS_H_
#define SKINNING_SERVER_POSE_DEFORMERS_DEFORMERS_H_

#include <memory>

#include "server/pose/deformer.h"

namespace skinning {

std::unique_ptr<Deformer> NewLbsDeformer();                        // DEFORMER_UNSPECIFIED
std::unique_ptr<Deformer> NewDqsDeformer();                        // DEFORMER_DQS
std::unique_ptr<Deformer> NewStbsDeformer(bool dqs);               // DEFORMER_STBS_LBS / _DQS
std::unique_ptr<Deformer> NewSwingTwistDeformer();                 // DEFORMER_SWING_TWIST
std::unique_ptr<Deformer> NewElasticDeformer();                    // DEFORMER_ELASTIC
// DEFORMER_PSD_*: `kind` one of the four, `base` the LBS or DQS deformer it builds on (and poses
// with when the rig has no examples); `base` must outlive it.
std::unique_ptr<Deformer> NewPsdDeformer(v1::Deformer kind, const Deformer* base);

// Adds one deformer per v1::Deformer value (deformer.cc).
void AddAllDeformers(DeformerRegistry* registry);

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_DEFORMERS_DEFORMERS_H_
